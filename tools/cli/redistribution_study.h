#pragma once
// `meshsim study` on a meshsim.redistribution-study/1 file.

#include <string>

namespace meshsim::cli {

/// Runs every pair, prints a summary per group (or JSON), writes
/// results.csv, results.json and speedup plots under `out` when given.
void run_redistribution_study(const std::string& file, const std::string& out, bool json, bool no_plots);

}  // namespace meshsim::cli
