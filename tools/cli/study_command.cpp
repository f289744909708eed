// `meshsim study FILE`: run a resharding study, print a table per group,
// write results (CSV, JSON) and plots.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "planner/collective_study.h"
#include "planner/fidelity.h"
#include "planner/pipeline_study.h"
#include "planner/redistribute/study.h"
#include "planner/search/space_file.h"
#include "planner/study.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_option.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/progress.h"
#include "tools/cli/redistribution_study.h"
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

// A meshsim.collective-study/1 file: predicted against published, per row.
// Exits with an error when a row leaves its tolerance.
// Study kinds whose machines are not the one a calibration measured refuse
// it rather than ignore it.
void refuse_calibration(const StudyArgs& a, const std::string& why) {
  if (!a.calibration.file.empty()) throw UsageError(fmt::format("{}: --calibration does not apply", why));
}

void run_collective_study(StudyArgs& a) {
  refuse_calibration(a, "a collective study sets each row's machine and compares it with a published figure");
  const planner::CollectiveStudy s = planner::load_collective_study(a.file);
  a.out = prepare_output_dir(a.out, "--out");
  std::vector<planner::CollectiveStudyResult> results;
  Table tab({"row", "chosen", "predicted", "published", "error", "within"});
  std::size_t outside = 0;
  for (const auto& row : s.rows) {
    const auto& r = results.emplace_back(planner::run_collective_row(row));
    outside += r.within ? 0 : 1;
    tab.add({row.name, r.chosen, fmt::format("{:.1f} {}", r.predicted, planner::published_unit(row)),
             fmt::format("{:.1f}", row.published), fmt::format("{:+.1f} %", 100 * r.error),
             fmt::format("{} (±{:.0f} %)", r.within ? "yes" : "NO", 100 * row.tolerance)});
  }
  Json doc = planner::collective_study_json(s, results);
  if (!a.out.empty()) {
    write_text_file(a.out + "/results.csv", planner::collective_study_csv(s, results));
    write_text_file(a.out + "/results.json", dump_json(doc));
  }
  if (a.json) {
    doc["outside_tolerance"] = outside;
    fmt::print("{}", dump_json(doc));
  } else {
    fmt::print("{}: {}\n\n{}\n{} of {} rows within their tolerance\n", s.name, s.description,
               tab.render({false, false, true, true, true, false}), s.rows.size() - outside, s.rows.size());
  }
  if (outside > 0)
    throw UsageError(
        fmt::format("{} of {} rows of {} are outside their tolerance", outside, s.rows.size(), a.file));
}

// A meshsim.fidelity/1 file: every published figure beside ours. Exits
// with an error when a row leaves its bound.
std::string fidelity_band(const planner::FidelityResult& r, const planner::Band& b) {
  switch (r.kind) {
    case planner::FigureKind::relative: return fmt::format("±{:.0f} %", 100 * (b.hi / r.published - 1));
    case planner::FigureKind::range: return fmt::format("{:+.0f}..{:+.0f} %", 100 * b.lo, 100 * b.hi);
    case planner::FigureKind::order: return "holds";
  }
  return "?";
}

std::string fidelity_value(const planner::FidelityResult& r, double v) {
  switch (r.kind) {
    case planner::FigureKind::relative: return fmt::format("{:.3g} {}", v, r.unit);
    case planner::FigureKind::range: return fmt::format("{:+.1f} %", 100 * v);
    case planner::FigureKind::order: return v > 0 ? "holds" : "broken";
  }
  return "?";
}

void run_fidelity_report(StudyArgs& a) {
  refuse_calibration(a,
                     "a fidelity report compares meshsim's built-in models with published figures of "
                     "other machines");
  const planner::Fidelity f = planner::load_fidelity(a.file);
  a.out = prepare_output_dir(a.out, "--out");  // before the runs, not after
  const auto rows = planner::run_fidelity(f, [&](const std::string& step) {
    if (!a.json) fmt::print(stderr, "{}: {}\n", f.name, step);
  });
  const Json doc = planner::fidelity_json(f, rows);
  std::string plotted;
  if (!a.out.empty()) {
    const std::string csv = (std::filesystem::path(a.out) / "results.csv").string();
    write_text_file(csv, planner::fidelity_csv(rows));
    write_text_file((std::filesystem::path(a.out) / "results.json").string(), dump_json(doc));
    if (!a.no_plots)
      plotted = run_plot_script("plot_fidelity.py", csv, a.out) == 0
                    ? ", fidelity.png"
                    : " (plot skipped: python3-matplotlib missing?)";
  }
  const auto outside = doc["outside_bound"].get<std::size_t>();
  if (a.json) {
    fmt::print("{}", dump_json(doc));
  } else {
    fmt::print("{}: {}\n", f.name, f.description);
    std::vector<std::string> sources;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i > 0 && rows[i].group == rows[i - 1].group) continue;
      Table tab({"figure", "published", "ours", "error", "target", "bound", "verdict", "source"});
      for (const auto& r : rows) {
        if (r.group != rows[i].group) continue;
        auto at = std::find(sources.begin(), sources.end(), r.source);
        if (at == sources.end()) at = sources.insert(sources.end(), r.source);
        tab.add({r.name, fidelity_value(r, r.published), fidelity_value(r, r.ours),
                 r.kind == planner::FigureKind::order ? "" : fmt::format("{:+.1f} %", 100 * r.error),
                 fidelity_band(r, r.target), fidelity_band(r, r.bound),
                 std::string(planner::to_string(r.verdict)), fmt::format("[{}]", at - sources.begin() + 1)});
      }
      fmt::print("\n{}\n{}", rows[i].group, tab.render({false, true, true, true, true, true, false, false}));
    }
    fmt::print("\n");
    for (std::size_t k = 0; k < sources.size(); ++k) fmt::print("[{}] {}\n", k + 1, sources[k]);
    fmt::print(
        "\n{} rows: {} within their target, {} known gaps (outside the target, within the bound), {} "
        "outside their bound\n",
        rows.size(), rows.size() - doc["outside_target"].get<std::size_t>(),
        doc["outside_target"].get<std::size_t>() - outside, outside);
    if (!a.out.empty()) fmt::print("results: {}/results.csv, results.json{}\n", a.out, plotted);
  }
  if (outside > 0)
    throw UsageError(
        fmt::format("{} of {} rows of {} are outside their bound", outside, rows.size(), a.file));
}

// A meshsim.pipeline-study/1 file: iteration time per case and method.
void run_pipeline_study(StudyArgs& a) {
  const planner::PipelineStudy s = planner::load_pipeline_study(a.file);
  a.out = prepare_output_dir(a.out, "--out");
  topology::Topology topo = planner::load_study_topology(s.topology);
  sim::SimOptions opts;
  a.calibration.apply(topo, opts);
  const std::string compute = planner::prepare_study_options(s, topo, opts, !a.calibration.file.empty());
  const bool tty = !a.json;
  const auto rows =
      planner::run_pipeline_study(s, topo, opts, progress_reporter("study " + s.name, "cases", a.json),
                                  load_model_arg);  // a file beside the study, or a bundled model's name
  const Json doc = planner::pipeline_study_json(s, rows);
  if (!a.out.empty()) {
    write_text_file((std::filesystem::path(a.out) / "results.json").string(), dump_json(doc));
    write_text_file((std::filesystem::path(a.out) / "results.csv").string(),
                    planner::pipeline_study_csv(rows));
  }
  if (a.json) {
    fmt::print("{}", dump_json(doc));
    return;
  }
  fmt::print("{}: {}\ntopology {}; compute {}\niteration time (s) per method; gain = throughput over {}\n",
             s.name, s.description, topo.name, compute, s.baseline);
  for (const auto& group : s.groups) {
    std::vector<std::string> header{"case"};
    for (const auto& m : s.methods) header.push_back(m.name);
    const bool other_paper_baseline = s.paper_baseline != s.baseline;
    header.push_back("best gain");
    if (other_paper_baseline) header.push_back("best over " + s.paper_baseline);
    header.push_back("paper gain (over " + s.paper_baseline + ")");
    Table tab(header);
    for (const auto& c : s.cases) {
      if (c.group != group) continue;
      std::vector<std::string> cells{c.name};
      const planner::PipelineStudyRow* best = nullptr;
      double paper_base_s = 0;
      for (const auto& r : rows) {
        if (r.case_name != c.name) continue;
        cells.push_back(fmt::format("{:.3f}", r.iteration_s));
        if (r.method != s.bound && (!best || r.iteration_s < best->iteration_s)) best = &r;
        if (r.method == s.paper_baseline) paper_base_s = r.iteration_s;
      }
      cells.push_back(best ? fmt::format("{:+.1f} % ({})", 100 * best->gain, best->method)
                           : std::string("-"));
      if (other_paper_baseline)
        cells.push_back(best ? fmt::format("{:+.1f} %", 100 * (paper_base_s / best->iteration_s - 1))
                             : std::string("-"));
      cells.push_back(c.paper_gain ? fmt::format("{:+.0f} %", 100 * *c.paper_gain) : std::string("-"));
      tab.add(cells);
    }
    std::vector<bool> right(header.size(), true);
    right[0] = false;
    fmt::print("\n{}\n{}", group, tab.render(right));
  }
  if (!s.bound.empty())
    fmt::print("best: the fastest method but the bound ({}), which moves nothing between stages\n", s.bound);
  if (!a.out.empty() && tty) fmt::print("\nresults: {}/results.csv, results.json\n", a.out);
}

// The table's columns: each strategy the study plans (send-recv and
// broadcast also without balancing), then auto and signal.
std::vector<std::string> study_columns(const planner::Study& s) {
  std::vector<std::string> cols;
  for (planner::Strategy st : planner::kMovingStrategies) {
    if (std::find(s.strategies.begin(), s.strategies.end(), st) == s.strategies.end()) continue;
    const std::string name(planner::to_string(st));
    if (st == planner::Strategy::send_recv || st == planner::Strategy::broadcast)
      cols.push_back(name + " (naive)");
    cols.push_back(st == planner::Strategy::allgather ? "allgather (Alpa)" : name);
  }
  if (s.with_auto) cols.push_back("auto");
  if (std::find(s.strategies.begin(), s.strategies.end(), planner::Strategy::signal) != s.strategies.end())
    cols.push_back("signal");
  return cols;
}

void run_study(StudyArgs& a) {
  if (planner::is_fidelity(a.file)) {
    run_fidelity_report(a);
    return;
  }
  if (planner::is_collective_study(a.file)) {
    run_collective_study(a);
    return;
  }
  if (planner::is_pipeline_study(a.file)) {
    run_pipeline_study(a);
    return;
  }
  if (planner::redistribute::is_redistribution_study(a.file)) {
    refuse_calibration(a, "a redistribution study compares plans on the preset machines it names");
    run_redistribution_study(a.file, a.out, a.json, a.no_plots);
    return;
  }
  if (planner::search::is_search_space(a.file))
    throw UsageError(
        fmt::format("{} is a search space (meshsim.search/1): run `meshsim search {}`", a.file, a.file));
  const planner::Study s = planner::load_study(a.file);
  a.out = prepare_output_dir(a.out, "--out");
  topology::Topology topo = planner::load_study_topology(s.topology);
  a.calibration.apply(topo);
  const bool tty = !a.json;
  const auto rows = planner::run_study(s, topo, progress_reporter("study " + s.name, "cases", a.json));

  if (!a.out.empty()) {
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
                                       : r.strategy == "allgather"                      ? "allgather (Alpa)"
                                                                                        : r.strategy];
        cell = std::max(cell, r.effective_gbps);
        if (r.strategy == "broadcast" && r.balance == "none")
          best[r.case_name]["broadcast (naive)"] = r.effective_gbps;
        if (r.lower_bound_s > 0) bound[r.case_name] = r.effective_gbps * r.time_s / r.lower_bound_s;
        if (r.strategy == "auto") speedup[r.case_name] = r.speedup;
      }
      const std::vector<std::string> cols = study_columns(s);
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
      plotted = run_plot_script("plot_study.py", a.out + "/results.csv", a.out) == 0
                    ? " and bar charts (PNG)"
                    : " (plots skipped: python3-matplotlib missing?)";
    }
    if (tty) fmt::print("\nresults: {}/results.csv, results.json{}\n", a.out, plotted);
  }
}

}  // namespace

void add_study_command(CLI::App& app) {
  auto a = std::make_shared<StudyArgs>();
  auto* cmd = app.add_subcommand(
      "study",
      "Run a study file: meshsim.study/1 (resharding: every case x strategy x balance) or "
      "meshsim.pipeline-study/1 (training iterations: every case x method), "
      "meshsim.redistribution-study/1 (same-mesh resharding: every type pair, synth vs XLA) or "
      "meshsim.collective-study/1 (collectives against published nccl-tests figures) or "
      "meshsim.fidelity/1 (every published figure meshsim holds beside its prediction, e.g. "
      "configs/studies/fidelity.json)");
  cmd->add_option("file", a->file, "Study file, e.g. configs/studies/alpa-microbench.json")->required();
  a->calibration.add_to(*cmd);
  cmd->footer(
      "--calibration applies to resharding and pipeline studies, which run on the machine the study\n"
      "names; collective, redistribution and fidelity studies compare preset or published machines\n"
      "and refuse it.");
  cmd->add_option("--out", a->out,
                  "Directory for results.csv, results.json and, for resharding, redistribution and fidelity "
                  "studies, PNG charts");
  cmd->add_flag("--no-plots", a->no_plots, "Do not draw the charts");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a, cmd] {
    warn_needless(*cmd, {{"--no-plots", "--out"}});
    run_study(*a);
  });
}

}  // namespace meshsim::cli
