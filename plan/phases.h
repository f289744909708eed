#pragma once
// The phases of one training iteration on one GPU, as a profiler sees them
// and as the simulator predicts them: compute by pass (forward, backward,
// the optimizer step) and communication by kind of collective. A measured
// trace (traces/kineto.h) and a predicted iteration (pipeline/phases.h)
// both become PhaseEvents; compare_phases sets them side by side.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"

namespace meshsim::plan {

enum class Phase : std::uint8_t {
  forward,
  backward,
  optimizer,
  all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  send_recv,  // point to point: pipeline stage transfers (and broadcasts standing for them)
};
inline constexpr std::size_t kPhases = 8;
inline constexpr EnumNames<Phase, kPhases> kPhaseNames{"phase",
                                                       {{{Phase::forward, "forward"},
                                                         {Phase::backward, "backward"},
                                                         {Phase::optimizer, "optimizer"},
                                                         {Phase::all_reduce, "all-reduce"},
                                                         {Phase::all_gather, "all-gather"},
                                                         {Phase::reduce_scatter, "reduce-scatter"},
                                                         {Phase::all_to_all, "all-to-all"},
                                                         {Phase::send_recv, "send/recv"}}}};

/// One kernel (measured) or task (predicted) on the GPU compared, its times
/// from the iteration's start.
struct PhaseEvent {
  Phase phase = Phase::forward;
  std::string name;
  int stream = 0;
  Time start;
  Time duration;
};

/// One phase's busy time (the sum of its events' durations) predicted and
/// measured; error = predicted / measured − 1 (none when nothing was measured).
struct PhaseRow {
  Phase phase = Phase::forward;
  Time predicted;
  Time measured;
  std::optional<double> error;
};

/// A row per phase that either side has, in kPhaseNames' order.
[[nodiscard]] std::vector<PhaseRow> compare_phases(const std::vector<PhaseEvent>& predicted,
                                                   const std::vector<PhaseEvent>& measured);

}  // namespace meshsim::plan
