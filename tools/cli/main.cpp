// The meshsim command line, shared by `meshsim` and `meshsim-mpi`. Exit
// codes: 0 success, 1 a plan ran but its bytes did not verify, 2 bad input
// or environment (a message names the file, JSON path or argument), 3
// internal error (a bug), 4 a device fault (CUDA, cuBLAS or NCCL error, or
// a run past its --timeout).

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/memory_limit.h"
#include "core/unit_strings.h"
#include "tools/cli/commands.h"

namespace meshsim::cli {

namespace {

// A word where a command or a group's subcommand goes that names none
// ("unknown command X (commands: ...)"), which CLI11 would report as a
// missing subcommand.
std::optional<std::string> unknown_command(const CLI::App& app, int argc, char** argv) {
  const CLI::App* at = &app;
  std::string path = "meshsim";
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.empty() || word.front() == '-') return std::nullopt;  // options: CLI11's to check
    // (Option groups are subcommands without a name.)
    const auto subs = at->get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); });
    if (subs.empty()) return std::nullopt;
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : subs)
      if (sub->check_name(std::string(word))) next = sub;
    if (next == nullptr) {
      std::vector<std::string> names;
      for (const CLI::App* sub : subs) names.push_back(sub->get_name());
      return fmt::format("unknown command \"{}\" for {} (commands: {})", word, path, fmt::join(names, ", "));
    }
    path += " " + next->get_name();
    at = next;
  }
  return std::nullopt;
}

// Refuses NaN and infinities in every number option of `app` and its
// subcommands (a number option's range check lets NaN through).
void refuse_non_finite(CLI::App& app) {
  const CLI::Validator finite(
      [](std::string& value) -> std::string {
        double x = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
        if (ec == std::errc() && end == value.data() + value.size() && !std::isfinite(x))
          return fmt::format("{} is not a finite number", value);
        return {};
      },
      "", "finite");
  for (CLI::Option* o : app.get_options())
    if (o->get_type_name().find("FLOAT") != std::string::npos) o->check(finite);
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) refuse_non_finite(*sub);
}

// The values of the options given to `app` and the commands it ran, each
// with its option's name and whether the option writes a file.
struct GivenPath {
  std::string option;
  std::string path;
  bool output = false;
};

void given_paths(const CLI::App& app, std::vector<GivenPath>& out) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->count() == 0) continue;
    bool output = false;
    try {
      (void)const_cast<CLI::Option*>(o)->get_validator("output");
      output = true;
    } catch (const CLI::OptionNotFound&) {
    }
    const std::string name = o->get_name().empty() ? o->get_name(true, true) : o->get_name();
    for (const std::string& v : o->results()) out.push_back({name, v, output});
  }
  for (const CLI::App* sub : app.get_subcommands()) given_paths(*sub, out);
}

// Refuses, before any work, an output that names a file the command reads
// (it would be overwritten with what was made from it) or a file another
// output names (one would clobber the other).
void refuse_clashing_outputs(const CLI::App& app) {
  namespace fs = std::filesystem;
  std::vector<GivenPath> given;
  given_paths(app, given);
  auto same = [](const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
    const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
    return !ec && ca == fs::weakly_canonical(fs::absolute(b, ec), ec) && !ec;
  };
  for (std::size_t i = 0; i < given.size(); ++i) {
    const GivenPath& out = given[i];
    std::error_code ec;
    if (!out.output || (fs::exists(out.path, ec) && !fs::is_regular_file(out.path, ec)))
      continue;  // a device
    for (std::size_t k = 0; k < given.size(); ++k) {
      const GivenPath& other = given[k];
      if (k == i || (other.output && k < i)) continue;  // each pair of outputs once
      if (!other.output && !fs::is_regular_file(other.path, ec)) continue;
      if (!same(out.path, other.path)) continue;
      throw UsageError(
          fmt::format("{} {} names the same file as {}{}: one would overwrite {}; name another file",
                      out.option, out.path, other.option, other.output ? " (also an output)" : " (an input)",
                      other.output ? "the other" : "what this command reads"));
    }
  }
}

// --max-memory (or MESHSIM_MAX_MEMORY) on `app` and every command under
// it, before or after the command's name: a memory limit of the user's own
// below the machine's (docs/limits.md).
void add_max_memory_option(CLI::App& app) {
  app.add_option_function<std::string>(
         "--max-memory",
         [](const std::string& text) {
           try {
             const Bytes b = parse_bytes(text);
             if (b <= Bytes()) throw ParseError("it must be above 0");
             set_memory_limit(b.count());
           } catch (const ParseError& e) {
             throw CLI::ValidationError("--max-memory", e.what());
           }
         },
         "Memory meshsim may use (e.g. 8GiB), below what the machine, its cgroup and ulimit -v allow: work "
         "whose estimate needs more is refused before it starts (docs/limits.md)")
      ->envname("MESHSIM_MAX_MEMORY")
      ->type_name("SIZE");
  for (CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); }))
    add_max_memory_option(*sub);
}

}  // namespace

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
  add_max_memory_option(app);
  refuse_non_finite(app);
  app.parse_complete_callback([&app] { refuse_clashing_outputs(app); });  // before the command runs
  if (const auto unknown = unknown_command(app, argc, argv)) {
    fmt::print(stderr, "meshsim: {}\nRun with --help for more information.\n", printable(*unknown));
    return 2;
  }
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
