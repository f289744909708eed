#pragma once
// `meshsim pipeline`'s report of one built and simulated iteration: the
// JSON document (--json) and the text tables.

#include <optional>
#include <string>
#include <utility>

#include "core/json.h"
#include "model/model.h"
#include "pipeline/iteration.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::cli {

// One built and simulated iteration, for the printers.
struct PipelineRun {
  model::Model model;
  topology::Topology topo;
  pipeline::PipelineConfig cfg;
  std::string compute_models;  // the GPU compute models in use, in words
  pipeline::PipelineIteration it;
  sim::SimResult r;
  pipeline::PipelineMetrics pm;
  double build_s = 0;
  double sim_s = 0;
  std::string placed;   // where a placed job landed (topology::place_job); empty: contiguous
  std::string gpu;      // the GPUs' compute model, if known
  double capacity = 0;  // its memory in bytes (0: unknown)
  // --uncertainty: the metrics with every profile figure at the slow, then
  // the fast end of its spread.
  std::optional<std::pair<pipeline::PipelineMetrics, pipeline::PipelineMetrics>> band;
  // The schedule, stage-transfer strategy and balance as the command line
  // named them, repeated in the report.
  std::string schedule;
  std::string reshard;
  std::string balance;

  [[nodiscard]] bool fits(const pipeline::DeviceMemory& m) const {
    return model::fits_in(m.total(), capacity, cfg.memory_reserve);
  }
};

/// Bytes in GiB, two decimals.
[[nodiscard]] std::string gib(double bytes);

/// The training options beyond the layout, as a phrase (" with ...": empty
/// when none is set).
[[nodiscard]] std::string describe_training(const pipeline::PipelineConfig& cfg);

/// --json: the configuration, metrics, stages, memory and transfers.
[[nodiscard]] Json pipeline_json(const PipelineRun& run);

/// The text report: the configuration, the per-device table, the results.
void print_pipeline_text(const PipelineRun& run);

}  // namespace meshsim::cli
