#pragma once
// Options shared by the commands that simulate training (`pipeline`,
// `search`, `terapipe`): the model (a file, or a name under
// configs/models/), the achieved fraction of the GPU's compute peak and
// the framework's host work per launched kernel.

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/model.h"
#include "sim/compute_model.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::cli {

void add_model_option(CLI::App& cmd, std::string& model);
/// A meshsim.model/1 file, or the name of one in configs/models/ ("gpt3-1.3b").
[[nodiscard]] model::Model load_model_arg(const std::string& model);

void add_compute_efficiency_option(CLI::App& cmd, std::optional<double>& efficiency);

/// --host-per-kernel DURATION; `default_note` says what applies without it.
void add_host_per_kernel_option(CLI::App& cmd, std::optional<std::string>& duration,
                                const std::string& default_note);
/// The --host-per-kernel duration, or `otherwise`; `eager`: the device
/// profiles' figure for an eager framework on `topo`'s machines
/// (sim::eager_host_per_kernel of `models`). UsageError unless it is eager
/// with such a figure or a duration from 0 to 1 s.
[[nodiscard]] Time host_per_kernel_value(const std::optional<std::string>& duration, Time otherwise,
                                         const topology::Topology& topo,
                                         const std::vector<sim::DeviceModel>& models);

}  // namespace meshsim::cli
