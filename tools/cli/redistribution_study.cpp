// `meshsim study` on a redistribution study: synth against XLA-style for
// every pair of sharding types, per group.

#include "tools/cli/redistribution_study.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "planner/redistribute/study.h"
#include "runtime/host_backend.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/progress.h"
#include "tools/cli/table.h"

namespace meshsim::cli {

namespace rd = planner::redistribute;

namespace {

void print_summary(const rd::RedistStudy& s, const std::vector<rd::GroupSummary>& summary) {
  fmt::print(
      "{}: {}\nspeedup = XLA-style time / synth (rink) time, over the pairs where XLA-style moves data; "
      "more network and over bound count synth and rink plans\n\n",
      s.name, s.description);
  Table tab({"group", "pairs", "verified", "synth geomean", "max", "min", "slower", "rink geomean", "max",
             "more network", "over bound", "synth peak/M", "xla peak/M"});
  for (const auto& g : summary)
    tab.add({g.group, fmt::format("{}", g.pairs), fmt::format("{}/{}", g.verified, g.plans),
             fmt::format("{:.2f}x", g.geomean_speedup), fmt::format("{:.2f}x", g.max_speedup),
             fmt::format("{:.2f}x", g.min_speedup), fmt::format("{}", g.synth_slower),
             fmt::format("{:.2f}x", g.rink_geomean_speedup), fmt::format("{:.2f}x", g.rink_max_speedup),
             fmt::format("{}", g.more_network), fmt::format("{}", g.over_memory_bound),
             fmt::format("{:.2f}", g.synth_peak_over_m), fmt::format("{:.2f}", g.xla_peak_over_m)});
  std::vector<bool> right(13, true);
  right[0] = false;
  fmt::print("{}", tab.render(right));
  const auto& all = summary.back();
  fmt::print(
      "\nall groups, Rink et al.'s steps alone: geometric-mean speedup {:.2f}x over XLA-style (they report "
      "1.22x), maximum {:.2f}x (they report 5.7x) at {}\n"
      "synth (with direct exchanges): geometric mean {:.2f}x, maximum {:.2f}x at {}; slowest {:.2f}x at {}\n",
      all.rink_geomean_speedup, all.rink_max_speedup, all.rink_max_pair, all.geomean_speedup, all.max_speedup,
      all.max_pair, all.min_speedup, all.min_pair);
}

}  // namespace

void run_redistribution_study(const std::string& file, const std::string& out_option, bool json,
                              bool no_plots) {
  const rd::RedistStudy s = rd::load_redistribution_study(file);
  const std::string out = prepare_output_dir(out_option, "--out");
  const auto rows = rd::run_redistribution_study(
      s, [](const plan::Plan& p) { return runtime::verify_on_host(p).ok; },
      progress_reporter("study " + s.name, "pairs", json));
  const auto summary = rd::summarise(s, rows);
  const Json doc = rd::redistribution_study_json(s, rows);
  if (!out.empty()) {
    write_text_file(out + "/results.csv", rd::redistribution_study_csv(rows));
    write_text_file(out + "/results.json", dump_json(doc));
  }
  if (json)
    fmt::print("{}", dump_json(doc));
  else
    print_summary(s, summary);
  if (!out.empty() && !no_plots) {
    const bool plotted = run_plot_script("plot_redistribution.py", out + "/results.csv", out) == 0;
    if (!json)
      fmt::print("\nresults: {}/results.csv, results.json{}\n", out,
                 plotted ? ", speedup.png" : " (plot skipped: python3-matplotlib missing?)");
  }
  const auto& all = summary.back();
  if (all.verified != all.plans)
    throw VerificationFailed(
        fmt::format("{} of {} plans failed host verification", all.plans - all.verified, all.plans));
}

}  // namespace meshsim::cli
