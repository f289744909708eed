#pragma once
// `pipeline --plot PNG`: a Gantt chart of one simulated iteration.

#include <string>

#include "planner/pipeline_plan.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::cli {

/// Draws, for the first data replica, one row per pipeline device (its
/// first GPU): forward, backward and weight-gradient passes by microbatch,
/// the tensor- and data-parallel all-reduces on its compute stream, and the
/// optimizer step, with tools/plot_gantt.py. UsageError when the chart
/// cannot be drawn.
void plot_pipeline_gantt(const std::string& png, const planner::PipelineIteration& it,
                         const topology::Topology& topo, const sim::SimResult& r, const std::string& title);

}  // namespace meshsim::cli
