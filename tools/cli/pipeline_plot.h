#pragma once
// `pipeline --plot PNG`: a Gantt chart of one simulated iteration.

#include <string>

#include "pipeline/iteration.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::cli {

/// The Gantt rows of one iteration, for the first data replica: one row
/// per pipeline device (its first GPU) holding its forward, backward and
/// weight-gradient passes by microbatch, the tensor- and data-parallel
/// all-reduces on its compute stream, and the optimizer step; `panel`
/// names the iteration when a chart shows several.
struct GanttRows {
  std::string csv;  // panel,device,kind,microbatch,start_s,end_s lines
  void add(const std::string& panel, const pipeline::PipelineIteration& it, const topology::Topology& topo,
           const sim::SimResult& r);
};

/// Draws the rows with tools/plot_gantt.py: one chart per panel, one above
/// the other on a shared time axis. UsageError when it cannot be drawn.
void plot_pipeline_gantt(const std::string& png, const GanttRows& rows, const std::string& title);

}  // namespace meshsim::cli
