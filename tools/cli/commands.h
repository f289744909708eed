#pragma once
// Registration of the CLI's subcommands. Each command's callback runs during
// parsing and may throw meshsim errors; meshsim.cpp maps them to exit codes.

#include <CLI/CLI.hpp>

#include "core/error.h"

namespace meshsim::cli {

void add_topo_commands(CLI::App& app);
void add_info_command(CLI::App& app);
void add_sim_commands(CLI::App& app);
void add_collective_command(CLI::App& app);
void add_reshard_command(CLI::App& app);
void add_redistribute_command(CLI::App& app);
void add_search_command(CLI::App& app);
void add_study_command(CLI::App& app);
void add_runtime_commands(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_pipeline_command(CLI::App& app);
void add_terapipe_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_workload_command(CLI::App& app);

/// Parses the command line and runs the command; returns the exit status.
int run_cli(int argc, char** argv);

/// A plan ran but some destination bytes were wrong: exit status 1.
class VerificationFailed : public Error {
 public:
  using Error::Error;
};

}  // namespace meshsim::cli
