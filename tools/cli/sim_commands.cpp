// `meshsim simulate`.

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/json_writer.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "plan/plan_json.h"
#include "sim/executor.h"
#include "sim/plan_devices.h"
#include "sim/ring_order.h"
#include "tools/cli/bottlenecks.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/topology_source.h"
#include "tools/cli/trace_option.h"
#include "topology/mesh.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

namespace {

struct SimulateArgs {
  std::string plan;
  TopologySource topology;
  CalibrationOption calibration;
  std::string trace;
  TraceDetailOption trace_detail;
  std::string csv;
  bool json = false;
  bool check_rates = false;
  std::size_t top = 5;
};

void run_simulate(SimulateArgs& a) {
  topology::Topology topo = a.topology.load();
  const plan::LoadedPlan loaded = plan::load_plan(a.plan);
  const plan::Plan& plan = loaded.plan;
  (void)sim::plan_nodes(plan, topo, a.plan);  // a device the topology lacks: the error names this file
  sim::SimOptions opts;
  a.calibration.apply(topo, opts);
  const std::string compute =
      sim::apply_compute_efficiency(topo, opts.device_models, std::nullopt, plan::kDefaultMathDType);
  opts.record_link_timeline = !a.trace.empty();
  opts.check_rates = a.check_rates;
  const sim::SimResult r = sim::simulate(plan, loaded.schedule, topo, opts);
  if (!a.trace.empty()) write_trace(a.trace, a.trace_detail.value(), plan, topo, r);
  if (!a.csv.empty())
    write_file(a.csv, [&](std::ostream& out) { traces::write_task_csv(out, plan, r.timeline()); });
  if (a.json) {
    Json crit = Json::array();
    for (std::size_t i : r.critical_path)
      crit.push_back(Json{{"id", plan.tasks[i].id},
                          {"start_us", r.tasks[i].start.microseconds()},
                          {"end_us", r.tasks[i].end.microseconds()}});
    // The tasks are written one at a time (a plan may have millions).
    write_stdout([&](std::ostream& out) {
      JsonWriter w(out, Json{{"plan", plan.name},
                             {"topology", topo.name},
                             {"compute_models", compute},
                             {"makespan_us", r.makespan.microseconds()},
                             {"tasks", Json::array()},
                             {"critical_path", std::move(crit)},
                             {"bottlenecks", bottlenecks_json(topo, r, a.top)}});
      w.begin_array("tasks");
      for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
        Json o{{"id", plan.tasks[i].id},
               {"start_us", r.tasks[i].start.microseconds()},
               {"end_us", r.tasks[i].end.microseconds()}};
        if (plan.tasks[i].kind == plan::TaskKind::collective) {
          const auto& c = r.collectives[i];
          o["algorithm"] = std::string(plan::to_string(c.algorithm));
          o["protocol"] = std::string(plan::to_string(c.protocol));
          o["channels"] = c.channels;
        }
        w.add(o);
      }
      w.end_array();
      w.finish();
    });
    return;
  }
  fmt::print("plan {} on {}: {} tasks, makespan {}\ncompute {}\n\n", plan.name.empty() ? a.plan : plan.name,
             topo.name, plan.tasks.size(), human_string(r.makespan), compute);
  Table cp({"critical path", "kind", "devices", "start", "end", "duration"});
  for (std::size_t i : r.critical_path) {
    const auto& t = plan.tasks[i];
    const std::string& first = plan.devices[t.devices[0]];
    cp.add({t.id, std::string(to_string(t.kind)),
            t.kind == plan::TaskKind::send ? fmt::format("{} -> {}", first, plan.devices[t.devices[1]])
            : t.devices.size() == 1        ? first
                                           : fmt::format("{} ({} GPUs)", first, t.devices.size()),
            human_string(r.tasks[i].start), human_string(r.tasks[i].end),
            human_string(r.tasks[i].end - r.tasks[i].start)});
  }
  fmt::print("{}\n", cp.render({false, false, false, true, true, true}));
  fmt::print("{}", bottlenecks_table(topo, r, a.top));
  if (!a.trace.empty()) fmt::print("\ntrace: {} (open in ui.perfetto.dev)\n", a.trace);
  if (!a.csv.empty()) fmt::print("task table: {}\n", a.csv);
}

}  // namespace

void add_sim_commands(CLI::App& app) {
  {
    auto a = std::make_shared<SimulateArgs>();
    auto* cmd = app.add_subcommand("simulate", "Simulate a plan (meshsim.plan/1) on a topology");
    cmd->add_option("plan", a->plan, "Plan file (meshsim.plan/1)")->required();
    a->topology.add_to(*cmd, "--topology");
    a->calibration.add_with_profile_to(*cmd);
    cmd->add_option("--trace", a->trace, "Write a Chrome/Perfetto trace (open in ui.perfetto.dev)")
        ->check(output_file());
    a->trace_detail.add_to(*cmd);
    cmd->add_option("--csv", a->csv, "Write one row per task")->check(output_file());
    cmd->add_option("--top", a->top, "How many bottleneck links to list, by utilisation (default 5)")
        ->check(CLI::Range(1, 1000));
    cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
    cmd->add_flag("--check-rates", a->check_rates,
                  "Check after every bandwidth computation that the rates are max-min fair (every link "
                  "within capacity, every flow at its cap or largest on a saturated link); slower");
    cmd->callback([a, cmd] {
      warn_needless(*cmd, {{"--trace-detail", "--trace"}});
      run_simulate(*a);
    });
  }
}

}  // namespace meshsim::cli
