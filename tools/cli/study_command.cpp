// `meshsim study FILE`: run a resharding study, print a table per group,
// write results (CSV, JSON) and plots.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "planner/study.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/table.h"
#include "topology/cluster.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

namespace meshsim::cli {

namespace {

struct StudyArgs {
  std::string file;
  CalibrationOption calibration;
  std::string out;
  bool json = false;
  bool no_plots = false;
};

void run_study(StudyArgs& a) {
  const planner::Study s = planner::load_study(a.file);
  topology::Topology topo = [&] {
    if (topology::find_host_preset(s.topology) != nullptr) {
      topology::ClusterSpec spec;
      spec.host_preset = s.topology;
      return topology::build_cluster(spec);
    }
    return topology::load_topology_file(s.topology);
  }();
  a.calibration.apply(topo);
  const bool tty = !a.json;
  const auto rows = planner::run_study(s, topo, [&](std::size_t done, std::size_t total) {
    if (tty) fmt::print(stderr, "\rstudy {}: case {}/{}", s.name, done, total);
  });
  if (tty) fmt::print(stderr, "\n");

  if (!a.out.empty()) {
    std::filesystem::create_directories(a.out);
    write_text_file((std::filesystem::path(a.out) / "results.csv").string(), planner::study_csv(rows));
    write_text_file((std::filesystem::path(a.out) / "results.json").string(),
                    dump_json(planner::study_json(s, rows)));
  }
  if (a.json) {
    fmt::print("{}", dump_json(planner::study_json(s, rows)));
  } else {
    fmt::print(
        "{}: {}\ntopology {}\neffective bandwidth (Gb/s: tensor bits / time), speedup of auto over naive "
        "send-recv\n",
        s.name, s.description, topo.name);
    for (const auto& group : s.groups) {
      // Per case: the best over balancing modes of each strategy.
      std::map<std::string, std::map<std::string, double>> best;  // case -> column -> Gbps
      std::vector<std::string> order;
      std::map<std::string, double> bound, speedup;
      for (const auto& r : rows) {
        if (r.group != group) continue;
        if (!best.contains(r.case_name)) order.push_back(r.case_name);
        auto& cell = best[r.case_name][r.strategy == "send-recv" && r.balance == "none" ? "send-recv (naive)"
                                                                                        : r.strategy];
        cell = std::max(cell, r.effective_gbps);
        if (r.strategy == "broadcast" && r.balance == "none")
          best[r.case_name]["broadcast (naive)"] = r.effective_gbps;
        if (r.lower_bound_s > 0) bound[r.case_name] = r.effective_gbps * r.time_s / r.lower_bound_s;
        if (r.strategy == "auto") speedup[r.case_name] = r.speedup;
      }
      const std::vector<std::string> cols{"send-recv (naive)", "send-recv", "allgather", "broadcast (naive)",
                                          "broadcast",         "auto",      "signal"};
      std::vector<std::string> header{"case", "bound"};
      header.insert(header.end(), cols.begin(), cols.end());
      header.push_back("auto speedup");
      Table tab(header);
      for (const auto& c : order) {
        std::vector<std::string> cells{
            c, bound.contains(c) ? fmt::format("{:.2f}", bound[c]) : std::string("-")};
        for (const auto& col : cols)
          cells.push_back(best[c].contains(col) ? fmt::format("{:.2f}", best[c][col]) : std::string("-"));
        cells.push_back(speedup.contains(c) ? fmt::format("{:.2f}x", speedup[c]) : std::string("-"));
        tab.add(cells);
      }
      std::vector<bool> right(header.size(), true);
      right[0] = false;
      fmt::print("\n{}\n{}", group, tab.render(right));
    }
  }
  if (!a.out.empty()) {
    std::string plotted;
    if (!a.no_plots) {
      const std::string script = std::string(MESHSIM_SOURCE_DIR) + "/tools/plot_study.py";
      // Debian's python3-matplotlib belongs to /usr/bin/python3, which a
      // pyenv or venv python3 earlier on PATH would not see.
      const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
      const std::string cmd =
          fmt::format("{} '{}' '{}/results.csv' '{}' > /dev/null 2>&1", python, script, a.out, a.out);
      plotted = std::system(cmd.c_str()) == 0 ? " and bar charts (PNG)"
                                              : " (plots skipped: python3-matplotlib missing?)";
    }
    if (tty) fmt::print("\nresults: {}/results.csv, results.json{}\n", a.out, plotted);
  }
}

}  // namespace

void add_study_command(CLI::App& app) {
  auto a = std::make_shared<StudyArgs>();
  auto* cmd =
      app.add_subcommand("study", "Run a study file (meshsim.study/1): every case x strategy x balance");
  cmd->add_option("file", a->file, "Study file, e.g. configs/studies/alpa-microbench.json")->required();
  a->calibration.add_to(*cmd);
  cmd->add_option("--out", a->out,
                  "Directory for results.csv, results.json and one PNG chart per case group");
  cmd->add_flag("--no-plots", a->no_plots, "Do not draw the charts");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a] { run_study(*a); });
}

}  // namespace meshsim::cli
