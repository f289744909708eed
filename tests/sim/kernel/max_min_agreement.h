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
/// relative), or 1 when a check fails (its message goes to the next
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
  const std::vector<double> ref = max_min_rates(snap.problem);
  int bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) bad += close(snap.rates[i], ref[i]) ? 0 : 1;
  return bad;
}

}  // namespace meshsim::sim::kernel
