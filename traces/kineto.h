#pragma once
// One training iteration as the PyTorch profiler (Kineto) recorded it on one
// rank: its Chrome trace JSON read into phases (plan/phases.h).
//
// The iteration is a "ProfilerStep#N" annotation (the last one, or the one
// asked for). Its GPU work is every kernel, memcpy and memset whose launch
// (the CUDA runtime call with the same correlation id) falls inside the
// step, or, without a launch record, that starts on the GPU inside it.
// NCCL kernels are communication, by the collective their name (or their
// "Collective name" argument) says: AllReduce, AllGather, ReduceScatter,
// SendRecv (all-to-all when the argument says so, else send/recv),
// Broadcast (send/recv, as pipeline transfers). Every other kernel is
// compute: optimizer from the step's first "Optimizer.step#" annotation on,
// backward from its first "autograd::engine::evaluate_function:" op on,
// forward before. Times count from the step's first GPU event.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/units.h"
#include "plan/phases.h"

namespace meshsim::traces {

struct MeasuredStep {
  int rank = 0;        // distributedInfo.rank (0 without it)
  int world_size = 1;  // distributedInfo.world_size
  std::string gpu;     // the device's name from deviceProperties
  std::string step;    // "ProfilerStep#4"
  Time span;           // first GPU event's start to the last one's end
  std::vector<plan::PhaseEvent> events;
};

/// ConfigError naming `file` for a document that is not a Kineto trace, has
/// no ProfilerStep (or not step `step`), or no GPU work in it.
[[nodiscard]] MeasuredStep kineto_step(const Json& trace, const std::string& file,
                                       std::optional<int> step = {});
[[nodiscard]] MeasuredStep load_kineto_step(const std::string& file, std::optional<int> step = {});

/// A Chrome trace (ui.perfetto.dev) with `measured` above `predicted`: one
/// process each, a thread per stream, times from the iteration's start.
[[nodiscard]] Json side_by_side_trace(const std::vector<plan::PhaseEvent>& measured,
                                      const std::string& measured_name,
                                      const std::vector<plan::PhaseEvent>& predicted,
                                      const std::string& predicted_name);
/// dump_json(side_by_side_trace(...)), written an event at a time.
void write_side_by_side_trace(std::ostream& out, const std::vector<plan::PhaseEvent>& measured,
                              const std::string& measured_name,
                              const std::vector<plan::PhaseEvent>& predicted,
                              const std::string& predicted_name);

}  // namespace meshsim::traces
