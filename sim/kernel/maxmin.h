#pragma once
// Max-min fair rates: the bandwidth sharing rule of the flow network
// (sim/flow_network.h), as a pure function of links and flows.
//
// Problem. Links l = 1..L with capacities C_l > 0. Flows f = 1..F, each
// with a path P_f (a set of links, each with a weight w_fl > 0: at rate r_f
// the flow uses w_fl·r_f of link l) and an optional cap c_f > 0 (a flow
// without a cap has c_f = ∞). Every flow crosses at least one link or has
// a cap.
//
// Feasible rates satisfy, for every link l,   Σ_{f ∋ l} w_fl·r_f ≤ C_l,
// and 0 ≤ r_f ≤ c_f. The max-min fair rates are the feasible rates in which
// no flow's rate can grow without lowering the rate of a flow whose rate
// is not larger. They exist, are unique, and are characterised by the
// bottleneck condition: every flow f has r_f = c_f, or crosses a link l that
//   (a) is saturated:      Σ_{g ∋ l} w_gl·r_g = C_l, and
//   (b) where f is largest: r_f ≥ r_g for every flow g crossing l.
// (Weights scale what a flow uses, not its rate: on a saturated link, the
// flows frozen there share one rate.)
//
// Progressive filling computes them: all unfrozen flows share one level t,
// raised from 0. Link l fills when t reaches
//     t_l = (C_l − Σ_{frozen g ∋ l} w_gl·r_g) / Σ_{unfrozen g ∋ l} w_gl;
// at the smallest of the t_l and of the unfrozen caps, the flows of that
// link (or the capped flow) freeze at rate t. Freezing flows at the
// smallest level never lowers another link's t_l, so a heap of stale lower
// bounds, refreshed when popped, finds the next level: O((F·p + L) log L)
// for paths of p links.
//
// Exactness. Rates are doubles. Each freeze subtracts from a link's
// remaining capacity; check_max_min accepts a relative slack `tolerance`
// (a link is saturated within C_l·tolerance, rates are equal within
// r·tolerance).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshsim::sim::kernel {

struct MaxMinFlow {
  std::vector<std::uint32_t> links;  // indices into MaxMinProblem::capacity, each once
  std::vector<double> weights;       // empty: all 1; else one per link, > 0
  double cap = 0;                    // > 0: the most the flow may take; 0: none
};

struct MaxMinProblem {
  std::vector<double> capacity;  // per link, > 0
  std::vector<MaxMinFlow> flows;
};

/// The max-min fair rate of every flow (indexed like problem.flows).
[[nodiscard]] std::vector<double> max_min_rates(const MaxMinProblem& problem);

/// The rates and, per flow, where progressive filling froze it: a link
/// index (a saturated link on which it is fastest), or kFrozenAtCap.
struct MaxMinSolution {
  static constexpr std::uint32_t kFrozenAtCap = UINT32_MAX;
  std::vector<double> rate;
  std::vector<std::uint32_t> bottleneck;
};
[[nodiscard]] MaxMinSolution max_min_solve(const MaxMinProblem& problem);

/// The first condition of the definition above that `rates` break (a
/// sentence naming the flow or link), or nothing when they are the max-min
/// fair rates within `tolerance` (relative).
[[nodiscard]] std::optional<std::string> check_max_min(const MaxMinProblem& problem,
                                                       const std::vector<double>& rates,
                                                       double tolerance = 1e-9);

}  // namespace meshsim::sim::kernel
