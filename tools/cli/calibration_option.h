#pragma once
// `--calibration calib.json` (meshsim.calibration/1), taken by every command
// that simulates: its link efficiencies and latencies replace the
// topology's, its compute models the profiles'. `--profile` (commands that
// compute): each GPU model's bundled profile by default (configs/profiles/,
// sim/profiles.h), a named profile or file, or `peak`, the datasheet.

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "plan/calibration.h"
#include "sim/calibrate_apply.h"
#include "sim/executor.h"
#include "sim/profiles.h"
#include "topology/topology.h"

namespace meshsim::cli {

struct CalibrationOption {
  std::string file;
  std::optional<plan::Calibration> loaded;
  std::string profile;  // empty: each GPU model's bundled profile
  bool any_gpu = false;
  bool takes_profile = false;

  /// --calibration (links and compute).
  void add_to(CLI::App& cmd);
  /// --profile and --calibration-any-gpu too (commands that compute).
  void add_with_profile_to(CLI::App& cmd);
  /// Loads the file (once) if one was given; nullptr otherwise.
  const plan::Calibration* get();
  /// The compute models of `topo`'s GPUs into `opts` (the profiles, then the
  /// calibration's), and the calibration's links into `topo`.
  /// `end`: the profiles' figures at that end of their spreads.
  void apply(topology::Topology& topo, sim::SimOptions& opts, sim::SpreadEnd end = sim::SpreadEnd::value);
  /// The calibration's links alone, at `end` of their spreads.
  void apply(topology::Topology& topo, sim::SpreadEnd end = sim::SpreadEnd::value);
  /// Whether the calibration's GPU model is refused when it is not the
  /// cluster's (false where the calibrated GPU is the machine, as on the
  /// host and cuda backends' virtual devices).
  bool check_gpu = true;
};

/// The bundled profiles (configs/profiles/), read once.
const std::vector<sim::LoadedProfile>& bundled_profiles();

}  // namespace meshsim::cli
