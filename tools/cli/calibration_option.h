#pragma once
// `--calibration calib.json` (meshsim.calibration/1), taken by every command
// that simulates: its link efficiencies and latencies replace the
// topology's, its compute models the built-in roofline's.

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "plan/calibration.h"
#include "sim/calibrate_apply.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::cli {

struct CalibrationOption {
  std::string file;
  std::optional<plan::Calibration> loaded;

  void add_to(CLI::App& cmd);
  /// Loads the file (once) if one was given; nullptr otherwise.
  const plan::Calibration* get();
  /// Applies the links to `topo` and the compute models to `opts`.
  void apply(topology::Topology& topo, sim::SimOptions& opts);
  void apply(topology::Topology& topo);
};

}  // namespace meshsim::cli
