// The meshsim command line, shared by `meshsim` and `meshsim-mpi`. Exit
// codes: 0 success, 1 a plan ran but its bytes did not verify, 2 bad input
// or environment (a message names the file, JSON path or argument), 3
// internal error (a bug), 4 a device fault (CUDA, cuBLAS or NCCL error, or
// a run past its --timeout).

#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "tools/cli/commands.h"

namespace meshsim::cli {

int run_cli(int argc, char** argv) {
  CLI::App app{
      "meshsim: a discrete-event network and schedule simulator for model-parallel deep learning.\n"
      "Topologies are JSON files (meshsim.topology/1, see configs/topologies/) or host presets\n"
      "(`meshsim topo presets`). Every table-printing command takes --json.",
      "meshsim"};
  app.set_version_flag("--version", MESHSIM_VERSION);
  app.require_subcommand(1);
  add_topo_commands(app);
  add_sim_commands(app);
  add_collective_command(app);
  add_reshard_command(app);
  add_redistribute_command(app);
  add_search_command(app);
  add_study_command(app);
  add_pipeline_command(app);
  add_terapipe_command(app);
  add_compare_command(app);
  add_workload_command(app);
  add_runtime_commands(app);
  add_calibrate_command(app);
  add_info_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's messages quote the argument as given: escape what is not UTF-8.
    std::ostringstream err;
    const int rc = app.exit(e, std::cout, err);
    fmt::print(stderr, "{}", printable(err.str()));
    return rc == 0 ? 0 : 2;
  } catch (const VerificationFailed& e) {
    std::fflush(stdout);
    fmt::print(stderr, "meshsim: {}\n", printable(e.what(), std::string_view::npos));
    return 1;
  } catch (const DeviceError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "meshsim: device fault: {}\n", printable(e.what()));
    return 4;
  } catch (const Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "meshsim: error: {}\n", printable(e.what()));
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "meshsim: {}\nThis is a bug in meshsim; please report it with the command line.\n",
               printable(e.what()));
    return 3;
  }
  return 0;
}

}  // namespace meshsim::cli
