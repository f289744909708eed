#pragma once
// For tests of the incremental max-min solver: whether its rates are the
// max-min fair rates of its flows, by the structure's own invariants,
// check_max_min and a from-scratch max_min_rates.

#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include "sim/kernel/bottleneck_structure.h"
#include "sim/kernel/maxmin.h"

namespace meshsim::sim::kernel {

/// a and b agree to `rel` (relative).
inline bool close(double a, double b, double rel = 1e-9) {
  return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

/// The number of flows whose rate disagrees with max_min_rates (1e-9
/// relative), or 1 when a check fails or a network link's load() is not
/// the sum of its flows' weighted rates (the message goes to the next
/// assertion's report).
inline int disagreements(const BottleneckStructure& s) {
  if (const auto broken = s.check()) {
    UNSCOPED_INFO(*broken);
    return 1;
  }
  const BottleneckStructure::Snapshot snap = s.snapshot();
  if (const auto broken = check_max_min(snap.problem, snap.rates)) {
    UNSCOPED_INFO(*broken);
    return 1;
  }
  std::vector<double> load(snap.problem.capacity.size(), 0.0);
  for (std::size_t i = 0; i < snap.rates.size(); ++i)
    for (std::size_t h = 0; h < snap.problem.flows[i].links.size(); ++h)
      load[snap.problem.flows[i].links[h]] +=
          (snap.problem.flows[i].weights.empty() ? 1.0 : snap.problem.flows[i].weights[h]) * snap.rates[i];
  for (std::size_t l = 0; l < load.size(); ++l)
    if (std::fabs(s.load(static_cast<std::uint32_t>(l)) - load[l]) >
        1e-9 * s.capacity(static_cast<std::uint32_t>(l))) {
      UNSCOPED_INFO("link " << l << " reports load " << s.load(static_cast<std::uint32_t>(l))
                            << ", its flows " << load[l]);
      return 1;
    }
  const std::vector<double> ref = max_min_rates(snap.problem);
  int bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) bad += close(snap.rates[i], ref[i]) ? 0 : 1;
  return bad;
}

}  // namespace meshsim::sim::kernel
