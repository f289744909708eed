#pragma once
// The <topology> argument shared by the `topo` commands: a topology file
// (meshsim.topology/1, either form) or a host preset name, with the cluster
// options that apply to presets.

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "topology/topology.h"

namespace meshsim::cli {

struct TopologySource {
  std::string what;  // file path or preset name
  std::optional<int> hosts;
  std::optional<std::string> fabric;
  std::optional<std::string> nic_bandwidth;
  std::optional<std::string> nic_latency;
  std::optional<int> nics_per_leaf;
  std::optional<int> hosts_per_unit;
  std::optional<double> oversubscription;
  std::optional<int> spines;
  std::optional<int> leaves_per_pod;
  std::optional<int> cores;
  std::optional<double> core_oversubscription;
  std::optional<std::string> routing;    // ecmp, adaptive or deterministic, for files and presets
  std::optional<std::string> placement;  // topology/placement.h, for files and presets
  std::optional<std::string> switch_model;
  bool sharp = false;                    // --sharp: collectives may reduce in the switches
  std::optional<double> gpu_hour_price;  // topology/cost.h, for files and presets
  std::optional<double> host_watts;
  std::optional<double> switch_watts;

  /// Adds <topology> (positional, or the option `flag` when given, e.g.
  /// "--topology") and the preset options to `cmd`.
  void add_to(CLI::App& cmd, const std::string& flag = "", bool required = true);
  /// Adds --placement (commands that run a job: they place it with
  /// topology::place_job once they know its size).
  void add_placement_to(CLI::App& cmd);
  /// Adds --gpu-hour-price, --host-watts and --switch-watts (commands that report a
  /// training step's cost and energy, topology/cost.h).
  void add_cost_to(CLI::App& cmd);
  /// Loads the file or builds the preset cluster; ConfigError/UsageError on
  /// mistakes (a preset option given with a file is one).
  [[nodiscard]] topology::Topology load() const;
  /// --gpu-hour-price, --host-watts and --switch-watts over `t`'s (load
  /// applies them; for topologies built elsewhere, as from a search space).
  void apply_costs(topology::Topology& t) const;

 private:
  // --routing, --placement and the cost options over the file's or preset's.
  void apply_overrides(topology::Topology& t) const;
};

}  // namespace meshsim::cli
