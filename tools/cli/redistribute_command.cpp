// `meshsim redistribute`: change a tensor's sharding on one device mesh as
// a sequence of collectives (synthesised, and XLA's fallback beside it),
// simulate each plan, report its steps, bytes and peak memory.

#include <iterator>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "plan/plan_json.h"
#include "reshard/redistribute/evaluate.h"
#include "reshard/reshard.h"
#include "runtime/host_backend.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/topology_source.h"
#include "tools/cli/trace_option.h"
#include "topology/placement.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

namespace {

namespace rd = reshard::redistribute;

struct RedistributeArgs {
  TopologySource topology;
  CalibrationOption calibration;
  std::string tensor, mesh, dst_mesh, src_spec, dst_spec;
  std::string strategy = "all";
  std::string memory_limit;
  std::string plan_out, trace;
  TraceDetailOption trace_detail;
  bool verify = false;
  bool json = false;
  bool no_budget = false;
};

struct RedistributeRun {
  topology::Topology topo;
  rd::Problem p;
  rd::RedistBound lb;
  std::vector<rd::Outcome> rows;
  std::vector<std::optional<bool>> verified;
  std::size_t best = 0;
  std::string placed;  // where a placed job landed; empty: contiguous
  [[nodiscard]] std::optional<double> ratio(Time t) const {
    return lb.time > Time::zero() ? std::optional(t.seconds() / lb.time.seconds()) : std::nullopt;
  }
};

RedistributeRun evaluate(RedistributeArgs& a) {
  RedistributeRun run{a.topology.load(), {}, {}, {}, {}, 0, {}};
  a.calibration.apply(run.topo);
  run.placed = topology::place_selected(run.topo, {a.mesh, a.dst_mesh.empty() ? a.mesh : a.dst_mesh});
  run.p = rd::make_problem(run.topo, reshard::parse_tensor_arg(a.tensor), a.mesh, a.src_spec,
                           a.dst_mesh.empty() ? a.mesh : a.dst_mesh, a.dst_spec);
  if (a.verify) require_verifiable(run.p.tensor);
  std::optional<Bytes> limit;
  if (!a.memory_limit.empty()) {
    try {
      limit = parse_bytes(a.memory_limit);
    } catch (const Error& e) {
      throw UsageError(fmt::format("--memory-limit: {}", e.what()));
    }
  }
  std::vector<rd::Strategy> strategies{std::begin(rd::kAllStrategies), std::end(rd::kAllStrategies)};
  if (a.strategy != "all") strategies = {*rd::kStrategyNames.parse(a.strategy)};
  rd::StepTimer timer(run.topo, run.p);
  run.lb = rd::lower_bound(run.topo, run.p);
  run.rows = rd::evaluate(run.topo, run.p, strategies, timer, limit, !a.trace.empty(), !a.no_budget);
  if (run.rows.empty())
    throw UsageError(
        fmt::format("Rink's steps alone find no sequence from {} to {} that keeps every buffer "
                    "within the larger shard; synth (with the exchange) does",
                    run.p.src.str(), run.p.dst.str()));
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    run.verified.push_back(a.verify ? std::optional(runtime::verify_on_host(run.rows[i].emission.plan).ok)
                                    : std::nullopt);
    if (run.rows[i].result.makespan < run.rows[run.best].result.makespan) run.best = i;
  }
  return run;
}

Json steps_json(const rd::Outcome& o) {
  Json steps = Json::array();
  for (std::size_t k = 0; k < o.steps.size(); ++k) {
    const auto& r = o.emission.steps[k];
    steps.push_back(Json{{"kind", rd::to_string(r.step.kind)},
                         {"description", r.step.str()},
                         {"type_after", r.step.after.str()},
                         {"time_alone_s", o.step_times[k].seconds()},
                         {"moved_bytes", r.moved.count()},
                         {"cross_host_bytes", r.cross_host.count()},
                         {"peak_memory_bytes", r.peak_memory.count()}});
  }
  return steps;
}

void print_json(const RedistributeRun& run) {
  Json rows = Json::array();
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& o = run.rows[i];
    const auto ratio = run.ratio(o.result.makespan);
    Json j{{"name", rd::to_string(o.strategy)},
           {"time_s", o.result.makespan.seconds()},
           {"peak_memory_bytes", o.emission.peak_memory.count()},
           {"between_steps_max_bytes", o.emission.between_max.count()},
           {"moved_bytes", o.emission.moved.count()},
           {"network_bytes", o.network_bytes},
           {"cross_host_bytes", o.emission.cross_host.count()},
           {"tasks", o.emission.plan.tasks.size()},
           {"steps", steps_json(o)}};
    j["ratio_to_lower_bound"] = ratio ? Json(*ratio) : Json(nullptr);
    if (run.verified[i]) j["verified"] = *run.verified[i];
    rows.push_back(std::move(j));
  }
  fmt::print("{}", dump_json(Json{{"tensor_bytes", run.p.tensor.bytes().count()},
                                  {"max_shard_bytes", run.rows.front().emission.max_shard.count()},
                                  {"placement", topology::placement_of(run.topo)},
                                  {"lower_bound_s", run.lb.time.seconds()},
                                  {"strategies", std::move(rows)},
                                  {"best", rd::to_string(run.rows[run.best].strategy)}}));
}

void print_text(const RedistributeArgs& a, const RedistributeRun& run) {
  const auto& p = run.p;
  const std::string to_mesh =
      p.one_mesh() ? std::string()
                   : fmt::format(" on {} ({}x{})", a.dst_mesh, p.dst_axes.rows, p.dst_axes.cols);
  fmt::print("redistribute {} ({}) on {} ({}x{}) from [{}] to [{}]{} on {}\n", a.tensor,
             human_string(p.tensor.bytes()), a.mesh, p.axes.rows, p.axes.cols, a.src_spec, a.dst_spec,
             to_mesh, run.topo.name);
  if (!run.placed.empty()) fmt::print("placement {}\n", run.placed);
  fmt::print("largest shard M = {}; lower bound {} ({})\n\n",
             human_string(run.rows.front().emission.max_shard),
             run.lb.time > Time::zero() ? human_string(run.lb.time) : std::string("n/a (nothing moves)"),
             run.lb.bounding.empty() ? std::string("-") : run.lb.bounding);
  std::vector<std::string> header{"strategy", "time",    "x bound",     "steps",
                                  "moved",    "network", "peak memory", "peak / M"};
  if (a.verify) header.push_back("verified");
  Table tab(header);
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& o = run.rows[i];
    const auto ratio = run.ratio(o.result.makespan);
    std::vector<std::string> cells{
        std::string(rd::to_string(o.strategy)),
        human_string(o.result.makespan),
        ratio ? fmt::format("{:.2f}", *ratio) : std::string("-"),
        fmt::format("{}", o.steps.size()),
        human_string(o.emission.moved),
        human_string(Bytes(static_cast<std::int64_t>(o.network_bytes))),
        human_string(o.emission.peak_memory),
        fmt::format("{:.2f}", static_cast<double>(o.emission.peak_memory.count()) /
                                  static_cast<double>(o.emission.max_shard.count()))};
    if (a.verify) cells.push_back(run.verified[i] ? (*run.verified[i] ? "yes" : "NO") : "-");
    tab.add(cells);
  }
  fmt::print("{}", tab.render({false, true, true, true, true, true, true, true, false}));
  for (const auto& o : run.rows) {
    fmt::print("\n{}: {}\n", rd::to_string(o.strategy), o.steps.empty() ? "nothing to do" : "");
    if (o.steps.empty()) continue;
    Table steps({"step", "alone", "moved", "cross-host", "peak memory"});
    for (std::size_t k = 0; k < o.steps.size(); ++k) {
      const auto& r = o.emission.steps[k];
      steps.add({r.step.str(), human_string(o.step_times[k]), human_string(r.moved),
                 human_string(r.cross_host), human_string(r.peak_memory)});
    }
    fmt::print("{}", steps.render({false, true, true, true, true}));
  }
  if (!a.plan_out.empty())
    fmt::print("\nplan ({}): {}\n", rd::to_string(run.rows[run.best].strategy), a.plan_out);
  if (!a.trace.empty()) fmt::print("trace: {}\n", a.trace);
}

void run_redistribute(RedistributeArgs& a) {
  const RedistributeRun run = evaluate(a);
  const auto& best = run.rows[run.best];
  if (!a.plan_out.empty())
    write_input_file(
        a.plan_out, [&](std::ostream& out) { plan::write_plan_json(best.emission.plan, out); },
        "fewer devices make a smaller plan");
  if (!a.trace.empty())
    write_trace(a.trace, a.trace_detail.value(), best.emission.plan, run.topo, best.result);
  if (a.json)
    print_json(run);
  else
    print_text(a, run);
  for (std::size_t i = 0; i < run.rows.size(); ++i)
    if (run.verified[i] && !*run.verified[i])
      throw VerificationFailed(
          fmt::format("the {} plan failed host verification", rd::to_string(run.rows[i].strategy)));
}

}  // namespace

void add_redistribute_command(CLI::App& app) {
  auto a = std::make_shared<RedistributeArgs>();
  auto* cmd = app.add_subcommand(
      "redistribute",
      "Change a tensor's sharding on one mesh with a synthesised, memory-bounded sequence of collectives");
  a->topology.add_to(*cmd, "--topology");
  a->topology.add_placement_to(*cmd);
  a->calibration.add_to(*cmd);
  cmd->add_option("--tensor", a->tensor, "Shape and type, e.g. 4096x4096:bfloat16")->required();
  cmd->add_option("--mesh", a->mesh, "Mesh selector, e.g. hosts=0-1 or hosts=0-3,shape=4x8")->required();
  cmd->add_option("--dst-mesh", a->dst_mesh,
                  "Destination mesh when it is another one, which may share devices with --mesh (default: "
                  "--mesh); a move step crosses to it, and xla is left out");
  cmd->add_option("--src-spec", a->src_spec, "Source sharding, e.g. \"S0 R\"")->required();
  cmd->add_option("--dst-spec", a->dst_spec, "Destination sharding, e.g. \"R S01\"")->required();
  cmd->add_option("--strategy", a->strategy,
                  "all (default), synth (fastest memory-bounded sequence of steps, direct exchanges "
                  "included), rink (Rink et al.'s steps only: slice, all-gather, all-to-all, permute) or xla "
                  "(XLA's all-gather-then-slice fallback and its special cases)")
      ->check(CLI::IsMember(with({"all"}, rd::kStrategyNames.names())));
  cmd->add_option("--memory-limit", a->memory_limit,
                  "synth: most bytes a device may hold during a step (input + output), e.g. 512MiB");
  cmd->add_flag("--no-network-budget", a->no_budget,
                "synth: take the fastest sequence even when it sends more bytes into the fabric than "
                "XLA-style (by default it does not, when it can avoid it)");
  cmd->add_option("--plan-out", a->plan_out, "Write the fastest plan (meshsim.plan/1)")->check(output_file());
  cmd->add_option("--trace", a->trace, "Write the fastest plan's Perfetto trace")->check(output_file());
  a->trace_detail.add_to(*cmd);
  cmd->add_flag("--verify", a->verify, "Run each plan on the host backend and check every element");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a, cmd] {
    warn_needless(*cmd, {{"--trace-detail", "--trace"}});
    run_redistribute(*a);
  });
}

}  // namespace meshsim::cli
