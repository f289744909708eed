#include "sim/kernel/maxmin.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::sim::kernel;

namespace {

// Progressive filling written again, the slow and obvious way: every round
// computes each link's level from scratch, takes the smallest level (or
// cap) of all, and freezes every flow that a link at that level or its cap
// stops. No heap, no incremental sums.
std::vector<double> reference_rates(const MaxMinProblem& p) {
  const std::size_t n = p.flows.size();
  const auto w = [&](std::size_t f, std::size_t k) {
    return p.flows[f].weights.empty() ? 1.0 : p.flows[f].weights[k];
  };
  std::vector<double> rate(n, 0.0);
  std::vector<bool> frozen(n, false);
  for (std::size_t round = 0; round < n; ++round) {
    std::vector<double> level(p.capacity.size(), std::numeric_limits<double>::infinity());
    for (std::size_t l = 0; l < p.capacity.size(); ++l) {
      double given = 0;
      double weights = 0;
      for (std::size_t f = 0; f < n; ++f)
        for (std::size_t k = 0; k < p.flows[f].links.size(); ++k)
          if (p.flows[f].links[k] == l)
            (frozen[f] ? given : weights) += frozen[f] ? w(f, k) * rate[f] : w(f, k);
      if (weights > 0) level[l] = std::max(0.0, p.capacity[l] - given) / weights;
    }
    double t = std::numeric_limits<double>::infinity();
    for (double x : level) t = std::min(t, x);
    for (std::size_t f = 0; f < n; ++f)
      if (!frozen[f] && p.flows[f].cap > 0) t = std::min(t, p.flows[f].cap);
    if (!std::isfinite(t)) break;
    bool any = false;
    for (std::size_t f = 0; f < n; ++f) {
      if (frozen[f]) continue;
      bool stops = p.flows[f].cap > 0 && p.flows[f].cap <= t * (1 + 1e-12);
      for (std::uint32_t l : p.flows[f].links) stops = stops || level[l] <= t * (1 + 1e-12);
      if (stops) {
        rate[f] = t;
        frozen[f] = true;
        any = true;
      }
    }
    if (!any) break;
  }
  return rate;
}

MaxMinFlow flow(std::vector<std::uint32_t> links, std::vector<double> weights = {}, double cap = 0) {
  return MaxMinFlow{std::move(links), std::move(weights), cap};
}

// A random instance: 1-maxl links of capacity 1-100, 1-maxf flows over 1-4
// distinct links each; half the instances weigh their links (0.5-3), a
// third of the flows have a cap around a fair share.
MaxMinProblem random_problem(std::mt19937_64& rng, int maxl, int maxf) {
  std::uniform_int_distribution<int> nl(1, maxl), nf(1, maxf), hops(1, 4);
  std::uniform_real_distribution<double> cap(1, 100), wt(0.5, 3), u(0, 1);
  MaxMinProblem p;
  const int links = nl(rng);
  for (int l = 0; l < links; ++l) p.capacity.push_back(cap(rng));
  const bool weighted = u(rng) < 0.5;
  const int flows = nf(rng);
  for (int f = 0; f < flows; ++f) {
    std::vector<std::uint32_t> all(static_cast<std::size_t>(links));
    for (int l = 0; l < links; ++l) all[static_cast<std::size_t>(l)] = static_cast<std::uint32_t>(l);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(static_cast<std::size_t>(std::min(links, hops(rng))));
    MaxMinFlow fl{all, {}, 0};
    if (weighted)
      for (std::size_t k = 0; k < all.size(); ++k) fl.weights.push_back(wt(rng));
    if (u(rng) < 1.0 / 3) fl.cap = cap(rng) / flows * 4 * u(rng) + 1e-3;
    p.flows.push_back(std::move(fl));
  }
  return p;
}

}  // namespace

TEST_CASE("flows that share a link share it equally, whatever their weights", "[maxmin]") {
  // One link of 12. Two unweighted flows: 6 each. A flow that uses the link
  // twice per byte (weight 2) beside an unweighted one: t + 2t = 12, so both
  // run at 4 and the weighted one uses 8.
  CHECK(max_min_rates({{12}, {flow({0}), flow({0})}}) == std::vector<double>{6, 6});
  CHECK(max_min_rates({{12}, {flow({0}, {2}), flow({0})}}) == std::vector<double>{4, 4});
}

TEST_CASE("three saturation levels, hand-solved", "[maxmin]") {
  // Links A = 3, B = 10, D = 30. f0 crosses A and B, f1 A, f2 B, f3 B and D,
  // f4 and f5 D. Levels: A fills first at 3/2 = 1.5 (f0, f1). B has 10 - 1.5
  // = 8.5 left for f2, f3: 4.25 each. D has 30 - 4.25 = 25.75 left for f4,
  // f5: 12.875 each.
  const MaxMinProblem p{{3, 10, 30},
                        {flow({0, 1}), flow({0}), flow({1}), flow({1, 2}), flow({2}), flow({2})}};
  const auto r = max_min_rates(p);
  const std::vector<double> want{1.5, 1.5, 4.25, 4.25, 12.875, 12.875};
  for (std::size_t f = 0; f < want.size(); ++f) CHECK(r[f] == Approx(want[f]).epsilon(1e-12));
  CHECK_FALSE(check_max_min(p, r));
}

TEST_CASE("a cap below the fair share leaves the rest to the others", "[maxmin]") {
  // Link 10, three flows, the first capped at 2: it takes 2, the others
  // (10 - 2) / 2 = 4. A flow with a cap and no link gets its cap.
  const MaxMinProblem p{{10}, {flow({0}, {}, 2), flow({0}), flow({0}), flow({}, {}, 7)}};
  const auto r = max_min_rates(p);
  CHECK(r == std::vector<double>{2, 4, 4, 7});
  CHECK_FALSE(check_max_min(p, r));
}

TEST_CASE("the optimality check names what a wrong allocation breaks", "[maxmin]") {
  const MaxMinProblem p{{10}, {flow({0}), flow({0})}};
  CHECK_FALSE(check_max_min(p, {5, 5}));
  CHECK_THAT(*check_max_min(p, {6, 5}), Catch::Matchers::Contains("link 0 carries 11"));
  CHECK_THAT(*check_max_min(p, {4, 5}), Catch::Matchers::Contains("flow 0"));  // 1 unit left idle
  CHECK_THAT(*check_max_min(p, {-1, 5}), Catch::Matchers::Contains("flow 0 has rate"));
  const MaxMinProblem capped{{10}, {flow({0}, {}, 2)}};
  CHECK_THAT(*check_max_min(capped, {3}), Catch::Matchers::Contains("over its cap"));
  CHECK_THROWS_AS(max_min_rates({{1}, {flow({})}}), InternalError);  // no link, no cap
}

TEST_CASE("10,050 random instances: the solver agrees with the reference and passes the check",
          "[maxmin][property]") {
  // Small instances (up to 12 links, 24 flows) in bulk, then 50 larger ones
  // (up to 32 links, 150 flows). Rates equal to 1e-9 relative; the optimality
  // conditions hold to 1e-9.
  std::mt19937_64 rng(20261123);
  int disagreements = 0;
  for (int i = 0; i < 10'050; ++i) {
    const MaxMinProblem p = i < 10'000 ? random_problem(rng, 12, 24) : random_problem(rng, 32, 150);
    const auto got = max_min_rates(p);
    const auto want = reference_rates(p);
    bool same = true;
    for (std::size_t f = 0; f < got.size(); ++f) same = same && std::fabs(got[f] - want[f]) <= 1e-9 * want[f];
    const auto broken = check_max_min(p, got);
    if (!same || broken) {
      ++disagreements;
      if (disagreements <= 3) {
        INFO("instance " << i << ": " << (broken ? *broken : std::string("rates differ from the reference")));
        CHECK(false);
      }
    }
  }
  CHECK(disagreements == 0);
}
