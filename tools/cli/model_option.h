#pragma once
// Options shared by the commands that simulate training (`pipeline`,
// `terapipe`): the model (a file, or a name under configs/models/) and the
// achieved fraction of the GPU's compute peak.

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "model/model.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::cli {

void add_model_option(CLI::App& cmd, std::string& model);
/// A meshsim.model/1 file, or the name of one in configs/models/ ("gpt3-1.3b").
[[nodiscard]] model::Model load_model_arg(const std::string& model);

void add_compute_efficiency_option(CLI::App& cmd, std::optional<double>& efficiency);

}  // namespace meshsim::cli
