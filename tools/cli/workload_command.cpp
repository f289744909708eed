// `meshsim workload FILE`: several jobs on one cluster at once
// (studies/workload.h); per job its time alone and together and the
// slowdown, as a table, CSV/JSON, a chart and a trace with the jobs' hosts
// grouped.

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "studies/workload.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_option.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/progress.h"
#include "tools/cli/topology_source.h"
#include "tools/cli/trace_option.h"

namespace meshsim::cli {

namespace {

struct WorkloadArgs {
  std::string file;
  std::string out;
  std::string trace;
  TraceDetailOption trace_detail;
  bool json = false;
  bool no_plots = false;
};

// "h3 h7 h12 ... (16 hosts)": a job's hosts, the first few by name.
std::string hosts_text(const topology::Topology& t, const std::vector<int>& hosts) {
  std::string out;
  for (std::size_t k = 0; k < hosts.size() && k < 4; ++k)
    out += (k ? " " : "") + t.hosts()[static_cast<std::size_t>(hosts[k])].name;
  return hosts.size() > 4 ? fmt::format("{} ... ({} hosts)", out, hosts.size()) : out;
}

std::string time_text(Time t) {
  return human_string(t);
}

Json run_json(const studies::WorkloadRun& run, const topology::Topology& t) {
  Json jobs = Json::array();
  for (const auto& j : run.jobs) {
    Json hosts = Json::array();
    for (int h : j.hosts) hosts.push_back(t.hosts()[static_cast<std::size_t>(h)].name);
    jobs.push_back(Json{{"name", j.name},
                        {"kind", std::string(studies::kJobKindNames.name(j.kind))},
                        {"hosts", std::move(hosts)},
                        {"start_s", j.start.seconds()},
                        {"alone_s", j.alone.seconds()},
                        {"together_s", j.together.seconds()},
                        {"slowdown", j.slowdown()}});
  }
  return Json{
      {"topology", t.name}, {"makespan_s", run.together.makespan.seconds()}, {"jobs", std::move(jobs)}};
}

void write_outputs(const std::string& dir, const studies::WorkloadRun& run, const Json& doc, bool plots) {
  std::string csv = "job,alone,together,slowdown\n";
  for (const auto& j : run.jobs)
    csv += fmt::format("{},{},{},{:.3f}\n", csv_quoted(j.name), csv_quoted(time_text(j.alone)),
                       csv_quoted(time_text(j.together)), j.slowdown());
  const auto base = std::filesystem::path(dir);
  write_text_file((base / "results.csv").string(), csv);
  write_text_file((base / "results.json").string(), dump_json(doc));
  if (plots && run_plot_script("plot_compare.py", (base / "results.csv").string(), dir,
                               {(base / "workload.png").string()}) != 0)
    fmt::print(stderr, "warning: the chart was not drawn (needs python3-matplotlib)\n");
}

void run_workload_command(const WorkloadArgs& a) {
  const studies::Workload w = studies::load_workload(JsonCursor(read_json_file(a.file), a.file));
  TopologySource source;
  source.what = w.topology;
  topology::Topology topo = source.load();
  const std::string dir = prepare_output_dir(a.out, "--out");
  sim::SimOptions opts;
  opts.record_link_timeline = !a.trace.empty();
  auto progress = progress_reporter("workload", "simulations", a.json);
  const studies::WorkloadRun run = studies::run_workload(w, topo, load_model_arg, opts, progress);
  const Json doc = run_json(run, topo);
  if (!dir.empty()) write_outputs(dir, run, doc, !a.no_plots);
  if (!a.trace.empty()) {
    std::vector<traces::HostGroup> groups;
    for (const auto& j : run.jobs) groups.push_back({j.name, j.hosts});
    write_trace(a.trace, a.trace_detail.value(), run.plan, topo, run.together.timeline(),
                link_utilisation(run.together), groups);
  }
  if (a.json) {
    fmt::print("{}", dump_json(doc));
    return;
  }
  fmt::print("workload {} on {}: {} jobs, all done after {}\n\n", w.name, topo.name, run.jobs.size(),
             time_text(run.together.makespan));
  Table tab({"job", "kind", "hosts", "start", "alone", "together", "slowdown"});
  for (const auto& j : run.jobs)
    tab.add({j.name, std::string(studies::kJobKindNames.name(j.kind)), hosts_text(topo, j.hosts),
             time_text(j.start), time_text(j.alone), time_text(j.together),
             fmt::format("{:.2f}x", j.slowdown())});
  fmt::print("{}", tab.render({false, false, false, true, true, true, true}));
  fmt::print("(alone: the job by itself on the same hosts; slowdown: together / alone)\n");
  if (!dir.empty())
    fmt::print("\nresults: {}{}\n", (std::filesystem::path(dir) / "results.csv").string(),
               a.no_plots ? "" : ", workload.png");
  if (!a.trace.empty()) fmt::print("trace: {} (open in ui.perfetto.dev)\n", a.trace);
}

}  // namespace

void add_workload_command(CLI::App& app) {
  auto a = std::make_shared<WorkloadArgs>();
  auto* cmd = app.add_subcommand("workload", "Run several jobs on one cluster at once: each job's slowdown");
  cmd->footer(
      "A workload file (meshsim.workload/1, docs/what-if.md) names a topology and its jobs: collectives,\n"
      "training iterations (as `meshsim pipeline`), plan files and background traffic (checkpoint or\n"
      "storage flows at a rate), each with its hosts or placement, start and repeat count. Every job runs\n"
      "alone, then all together; the table gives each job's time both ways and its slowdown.\n"
      "Example: meshsim workload configs/workloads/two-jobs-2to1.json --out wl/ --trace wl-trace.json");
  cmd->add_option("file", a->file, "Workload file (meshsim.workload/1)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", a->out, "Write results.csv, results.json and workload.png into this directory");
  cmd->add_option("--trace", a->trace,
                  "Write a Perfetto trace of the jobs together, each job's hosts grouped")
      ->check(output_file());
  a->trace_detail.add_to(*cmd);
  cmd->add_flag("--json", a->json, "Print one JSON document instead of the table");
  cmd->add_flag("--no-plots", a->no_plots, "With --out, write no chart");
  cmd->callback([a] { run_workload_command(*a); });
}

}  // namespace meshsim::cli
