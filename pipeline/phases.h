#pragma once
// A simulated iteration's work on one GPU as phases (plan/phases.h), to set
// beside a profiler's: its compute tasks by pass (a task "F..." forward,
// "B..." and "W..." backward, the optimizer step), every collective it takes
// part in by op, its sends and broadcasts (stage transfers) as send/recv.
// A task's stream is its plan stream; times are the simulated ones.

#include <string>
#include <vector>

#include "pipeline/iteration.h"
#include "plan/phases.h"
#include "sim/executor.h"

namespace meshsim::pipeline {

/// The events of the plan device named `gpu`; UsageError when the plan has none of that name.
[[nodiscard]] std::vector<plan::PhaseEvent> gpu_phases(const PipelineIteration& it, const sim::SimResult& r,
                                                       const std::string& gpu);

}  // namespace meshsim::pipeline
