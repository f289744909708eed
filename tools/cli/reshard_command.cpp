// `meshsim reshard`: plan a cross-mesh resharding with every strategy and
// balancing mode, simulate each plan, compare with the lower bound.

#include <charconv>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "plan/plan_json.h"
#include "reshard/evaluate.h"
#include "reshard/reshard.h"
#include "runtime/host_backend.h"
#include "sim/executor.h"
#include "studies/reshard_study.h"
#include "tools/cli/bottlenecks.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/topology_source.h"
#include "tools/cli/trace_option.h"
#include "topology/mesh.h"
#include "topology/placement.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

namespace {

struct ReshardArgs {
  TopologySource topology;
  CalibrationOption calibration;
  std::string tensor;
  std::string src_mesh, src_spec, dst_mesh, dst_spec;
  std::string strategy = "all";
  std::string balance = "all";
  std::string plan_out;
  std::string trace;
  std::string plot;
  TraceDetailOption trace_detail;
  bool verify = false;
  bool json = false;
};

// Every plan evaluated, for the printers.
struct ReshardRun {
  topology::Topology topo;
  reshard::ReshardProblem p;
  std::vector<reshard::UnitTask> tasks;
  reshard::LowerBound lb;
  std::vector<reshard::ReshardOutcome> rows;
  std::vector<std::optional<bool>> verified;  // per row, with --verify
  std::size_t best = 0;                       // the fastest plan that moves data
  std::string placed;                         // where a placed job landed; empty: contiguous

  [[nodiscard]] double bits() const { return static_cast<double>(p.tensor.bytes().count()) * 8; }
  [[nodiscard]] std::optional<double> ratio(Time t) const {
    return lb.time > Time::zero() ? std::optional(t.seconds() / lb.time.seconds()) : std::nullopt;
  }
};

ReshardRun evaluate(ReshardArgs& a) {
  ReshardRun run{a.topology.load(), {}, {}, {}, {}, {}, 0, {}};
  a.calibration.apply(run.topo);
  run.placed = topology::place_selected(run.topo, {a.src_mesh, a.dst_mesh});
  run.p = reshard::make_problem(run.topo, reshard::parse_tensor_arg(a.tensor), a.src_mesh, a.src_spec,
                                a.dst_mesh, a.dst_spec);
  run.tasks = reshard::unit_tasks(run.p);
  run.lb = reshard::lower_bound(run.topo, run.p, run.tasks);
  std::vector<reshard::Strategy> strategies;
  if (a.strategy == "all") {
    strategies.assign(std::begin(reshard::kMovingStrategies), std::end(reshard::kMovingStrategies));
    strategies.push_back(reshard::Strategy::signal);
  } else if (a.strategy != "auto") {
    strategies = {*reshard::strategy_from(a.strategy)};
  }
  std::vector<reshard::Balance> balances;
  if (a.balance == "all") {
    balances = {reshard::Balance::none, reshard::Balance::device, reshard::Balance::host_size,
                reshard::Balance::host_order, reshard::Balance::search};
  } else {
    balances = {*reshard::balance_from(a.balance)};
  }
  if (a.verify) require_verifiable(run.p.tensor);
  run.rows = reshard::evaluate_reshard(run.topo, run.p, run.tasks, strategies, balances,
                                       a.strategy == "all" || a.strategy == "auto", !a.trace.empty());
  for (const auto& r : run.rows)
    run.verified.push_back(a.verify && r.moves_data ? std::optional(runtime::verify_on_host(r.plan).ok)
                                                    : std::nullopt);
  run.best = reshard::fastest_moving(run.rows);
  return run;
}

void print_reshard_json(const ReshardRun& run) {
  Json out = Json::array();
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& r = run.rows[i];
    const double secs = r.result.makespan.seconds();
    const auto ratio = run.ratio(r.result.makespan);
    Json o{{"name", r.method.name()},
           {"balance", r.method.balance_name()},
           {"time_s", secs},
           {"effective_gbps", run.bits() / secs / 1e9},
           {"network_bytes", r.network_bytes},
           {"busiest_nic", r.busiest_nic},
           {"busiest_nic_bytes", r.busiest_nic_bytes},
           {"tasks", r.plan.tasks.size()}};
    o["ratio_to_lower_bound"] = ratio ? Json(*ratio) : Json(nullptr);
    if (run.verified[i]) o["verified"] = *run.verified[i];
    out.push_back(std::move(o));
  }
  const auto& best = run.rows[run.best];
  fmt::print("{}", dump_json(Json{{"tensor_bytes", run.p.tensor.bytes().count()},
                                  {"unit_tasks", run.tasks.size()},
                                  {"placement", topology::placement_of(run.topo)},
                                  {"lower_bound_s", run.lb.time.seconds()},
                                  {"strategies", std::move(out)},
                                  {"best", best.method.name()},
                                  {"bottlenecks", bottlenecks_json(run.topo, best.result, 5)}}));
}

void print_reshard_text(const ReshardArgs& a, const ReshardRun& run) {
  const auto& [p, lb] = std::tie(run.p, run.lb);
  fmt::print("reshard {} ({}) from {} [{}] to {} [{}] on {}\n", a.tensor, human_string(p.tensor.bytes()),
             a.src_mesh, p.src_spec.str(), a.dst_mesh, p.dst_spec.str(), run.topo.name);
  if (!run.placed.empty()) fmt::print("placement {}\n", run.placed);
  fmt::print("{} unit tasks; lower bound {} ({} through {})\n\n", run.tasks.size(),
             lb.time > Time::zero() ? human_string(lb.time) : std::string("n/a"),
             human_string(lb.max_host_bytes), lb.bounding_host.empty() ? std::string("-") : lb.bounding_host);
  std::vector<std::string> header{"strategy", "balance",       "time",       "tensor Gb/s",
                                  "x bound",  "network bytes", "busiest NIC"};
  if (a.verify) header.push_back("verified");
  Table tab(header);
  auto bytes = [](double b) { return human_string(Bytes(static_cast<std::int64_t>(b))); };
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& r = run.rows[i];
    const auto ratio = run.ratio(r.result.makespan);
    std::vector<std::string> cells{r.method.name(),
                                   r.method.balance_name(),
                                   human_string(r.result.makespan),
                                   r.result.makespan > Time::zero() && r.moves_data
                                       ? fmt::format("{:.2f}", run.bits() / r.result.makespan.seconds() / 1e9)
                                       : std::string("-"),
                                   ratio ? fmt::format("{:.2f}", *ratio) : std::string("-"),
                                   bytes(r.network_bytes),
                                   r.busiest_nic.empty()
                                       ? std::string("-")
                                       : fmt::format("{} ({})", r.busiest_nic, bytes(r.busiest_nic_bytes))};
    if (a.verify) cells.push_back(run.verified[i] ? (*run.verified[i] ? "yes" : "NO") : "-");
    tab.add(cells);
  }
  const auto& best = run.rows[run.best];
  fmt::print("{}", tab.render({false, false, true, true, true, true, false, false}));
  fmt::print(
      "tensor Gb/s: the tensor's bits / time (past a NIC's rate when receivers share copies)\n"
      "signal: one byte per task, the bound where communication is free\n"
      "auto: the strategy / sender order it started from, +N the swaps its local search kept\n");
  fmt::print("\nfastest: {} / {}\n{}", best.method.name(), best.method.balance_name(),
             bottlenecks_table(run.topo, best.result, 5));
  if (!a.plan_out.empty())
    fmt::print("\nplan ({} / {}): {}\n", best.method.name(), best.method.balance_name(), a.plan_out);
  if (!a.trace.empty()) fmt::print("trace: {}\n", a.trace);
}

void run_reshard(ReshardArgs& a) {
  const ReshardRun run = evaluate(a);
  const auto& best = run.rows[run.best];
  if (!a.plan_out.empty())
    write_input_file(
        a.plan_out, [&](std::ostream& out) { plan::write_plan_json(best.plan, out); },
        "fewer devices make a smaller plan");
  if (!a.trace.empty()) write_trace(a.trace, a.trace_detail.value(), best.plan, run.topo, best.result);
  if (!a.plot.empty()) {
    const std::string label = fmt::format("{} {} [{}] to {} [{}]", a.tensor, a.src_mesh, run.p.src_spec.str(),
                                          a.dst_mesh, run.p.dst_spec.str());
    draw_chart("plot_study.py",
               studies::reshard_chart_data(studies::reshard_rows("reshard", label, run.p, run.lb, run.rows)),
               {a.plot}, a.plot);
  }
  if (a.json)
    print_reshard_json(run);
  else
    print_reshard_text(a, run);
  if (!a.plot.empty() && !a.json) fmt::print("chart: {}\n", a.plot);
  for (std::size_t i = 0; i < run.rows.size(); ++i)
    if (run.verified[i] && !*run.verified[i])
      throw Error(fmt::format("the {} / {} plan failed host verification", run.rows[i].method.name(),
                              run.rows[i].method.balance_name()));
}

}  // namespace

void add_reshard_command(CLI::App& app) {
  auto a = std::make_shared<ReshardArgs>();
  auto* cmd =
      app.add_subcommand("reshard",
                         "Plan and simulate a cross-mesh resharding with each strategy (the meshes may "
                         "overlap; on one shared mesh the redistribution strategies are added)");
  a->topology.add_to(*cmd, "--topology");
  a->topology.add_placement_to(*cmd);
  a->calibration.add_to(*cmd);
  cmd->add_option("--tensor", a->tensor, "Shape and type, e.g. 1024x1024x512:int32")->required();
  cmd->add_option("--src-mesh", a->src_mesh, "Source mesh selector, e.g. hosts=0-1")->required();
  cmd->add_option("--src-spec", a->src_spec, "Source sharding, e.g. \"S0 R R\"")->required();
  cmd->add_option("--dst-mesh", a->dst_mesh, "Destination mesh selector, e.g. hosts=2-3")->required();
  cmd->add_option("--dst-spec", a->dst_spec, "Destination sharding, e.g. \"R S01 R\"")->required();
  cmd->add_option("--strategy", a->strategy,
                  "all (default), send-recv, allgather (Alpa's send/recv + local all-gather), broadcast, "
                  "scatter (parts from every source replica, relayed over NVLink), signal or auto")
      ->check(CLI::IsMember(with({"all"}, with(reshard::kStrategyNames.names(), {"auto"}))));
  cmd->add_option("--balance", a->balance, "all (default), none, device, host-size, host-order or search")
      ->check(CLI::IsMember(with({"all"}, reshard::kBalanceNames.names())));
  cmd->add_option("--plan-out", a->plan_out, "Write the fastest plan (meshsim.plan/1)")->check(output_file());
  cmd->add_option("--trace", a->trace, "Write the fastest plan's Perfetto trace")->check(output_file());
  cmd->add_option(
         "--plot", a->plot,
         "Draw each strategy's tensor Gb/s (best over balancing modes) against the lower bound (PNG)")
      ->check(output_file());
  a->trace_detail.add_to(*cmd);
  cmd->add_flag("--verify", a->verify,
                "Execute each plan's data movement on host arrays and check every element");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of a table");
  cmd->callback([a, cmd] {
    warn_needless(*cmd, {{"--trace-detail", "--trace"}});
    run_reshard(*a);
  });
}

}  // namespace meshsim::cli
