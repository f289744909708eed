#pragma once
// The simulator's numeric policy, in one place.
//
// Times are integer picoseconds (core/units.h); rates (bytes per second),
// byte counts and levels of progressive filling are doubles.
//
// Rounding contract. A duration computed from an amount of work and a rate
// (bytes / rate, FLOPs / throughput, the slowest link of a collective) is
// rounded up to the next picosecond, and is at least 1 ps when the work is
// positive: a simulated completion is at most 1 ps late and never early,
// and a completion always comes after its cause. The flow network advances
// the bytes a flow has moved exactly (in doubles, over integer picosecond
// steps: its group's service, sim/kernel/flow_groups.h) and computes its
// completion afresh from them at every rate change, so the rounding does
// not accumulate: each flow ends at most 1 ps late however often its rate
// changes, and a chain of n dependent tasks at most n ps late.
//
// Tolerances (relative):
//   kRateTolerance  two rates this close are one rate: a re-solve that gives
//                   a flow its old rate up to the floating-point noise of
//                   the freezing order keeps its pending completion (under
//                   a picosecond per second of transfer);
//   kSaturated      a link whose load is this close to its capacity is full
//                   (loads are running sums of rate changes);
//   kStaleShare     progressive filling treats a link's fair share that grew
//                   by no more than this since it was queued as current;
//   kTie            planners' costs this close are equal (the first found
//                   is kept).

#include "core/units.h"

namespace meshsim::sim::kernel {

inline constexpr double kPsPerSecond = 1e12;
inline constexpr double kRateTolerance = 1e-12;
inline constexpr double kSaturated = 1e-9;
inline constexpr double kStaleShare = 1e-12;
inline constexpr double kTie = 1e-12;

/// `seconds` of work as a duration: rounded up to the next picosecond, at
/// least 1 ps when positive, zero otherwise. UsageError (the engine's clock
/// message) past the clock's limit (sim/kernel/engine.h).
[[nodiscard]] Time duration_up(double seconds);

/// Whether rate `a` is above rate `b` by more than kRateTolerance.
[[nodiscard]] inline bool rate_above(double a, double b) {
  return a > b * (1 + kRateTolerance);
}

/// Whether `rate` is `old` within kRateTolerance.
[[nodiscard]] inline bool same_rate(double rate, double old) {
  return (rate > old ? rate - old : old - rate) <= kRateTolerance * old;
}

}  // namespace meshsim::sim::kernel
