// `meshsim simulate` and `meshsim collective`.

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/unit_strings.h"
#include "sim/executor.h"
#include "sim/plan_json.h"
#include "sim/ring_order.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/table.h"
#include "tools/cli/topology_source.h"
#include "topology/mesh.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

namespace {

struct SimulateArgs {
  std::string plan;
  TopologySource topology;
  CalibrationOption calibration;
  std::string trace;
  std::string csv;
  bool json = false;
  std::size_t top = 5;
};

void run_simulate(SimulateArgs& a) {
  topology::Topology topo = a.topology.load();
  sim::Plan plan = sim::load_plan_file(a.plan);
  sim::check_plan_devices(plan, topo, a.plan);
  sim::SimOptions opts;
  a.calibration.apply(topo, opts);
  opts.record_link_timeline = !a.trace.empty();
  const sim::SimResult r = sim::simulate(plan, topo, opts);
  if (!a.trace.empty()) write_text_file(a.trace, traces::chrome_trace(plan, topo, r).dump() + "\n");
  if (!a.csv.empty()) write_text_file(a.csv, traces::task_csv(plan, r));
  const auto busiest = r.busiest_links(a.top);
  if (a.json) {
    Json crit = Json::array();
    for (std::size_t i : r.critical_path)
      crit.push_back(Json{{"id", plan.tasks[i].id},
                          {"start_us", r.tasks[i].start.microseconds()},
                          {"end_us", r.tasks[i].end.microseconds()}});
    Json links = Json::array();
    for (const auto& l : busiest)
      links.push_back(Json{
          {"link", traces::link_name(topo, l.link)}, {"bytes", l.bytes}, {"utilisation", l.utilisation}});
    Json tasks = Json::array();
    for (std::size_t i = 0; i < plan.tasks.size(); ++i)
      tasks.push_back(Json{{"id", plan.tasks[i].id},
                           {"start_us", r.tasks[i].start.microseconds()},
                           {"end_us", r.tasks[i].end.microseconds()}});
    fmt::print("{}", dump_json(Json{{"plan", plan.name},
                                    {"topology", topo.name},
                                    {"makespan_us", r.makespan.microseconds()},
                                    {"tasks", std::move(tasks)},
                                    {"critical_path", std::move(crit)},
                                    {"busiest_links", std::move(links)}}));
    return;
  }
  fmt::print("plan {} on {}: {} tasks, makespan {}\n\n", plan.name.empty() ? a.plan : plan.name, topo.name,
             plan.tasks.size(), human_string(r.makespan));
  Table cp({"critical path", "kind", "devices", "start", "end", "duration"});
  for (std::size_t i : r.critical_path) {
    const auto& t = plan.tasks[i];
    cp.add({t.id, std::string(to_string(t.kind)),
            t.devices.size() <= 2 ? fmt::format("{}", fmt::join(t.devices, " -> "))
                                  : fmt::format("{} ({} GPUs)", t.devices[0], t.devices.size()),
            human_string(r.tasks[i].start), human_string(r.tasks[i].end),
            human_string(r.tasks[i].end - r.tasks[i].start)});
  }
  fmt::print("{}\n", cp.render({false, false, false, true, true, true}));
  Table links({"busiest links", "bytes", "utilisation"});
  for (const auto& l : busiest)
    links.add({traces::link_name(topo, l.link), human_string(Bytes(static_cast<std::int64_t>(l.bytes))),
               fmt::format("{:.1f} %", 100.0 * l.utilisation)});
  fmt::print("{}", links.render({false, true, true}));
  if (!a.trace.empty()) fmt::print("\ntrace: {} (open in ui.perfetto.dev)\n", a.trace);
  if (!a.csv.empty()) fmt::print("task table: {}\n", a.csv);
}

struct CollectiveArgs {
  std::string op;
  TopologySource topology;
  CalibrationOption calibration;
  std::string group = "all";
  std::string size;
  std::string sweep;
  std::string algorithm = "ring";
  int channels = 0;  // 0: one per NIC of the group's hosts when it spans hosts
  bool json = false;
};

// nccl-tests bus-bandwidth factor (reference/hardware.md §3).
double bus_factor(const std::string& op, double n) {
  if (op == "allreduce") return 2 * (n - 1) / n;
  if (op == "allgather" || op == "reducescatter" || op == "alltoall") return (n - 1) / n;
  return 1.0;
}

std::vector<Bytes> sizes_of(const CollectiveArgs& a) {
  if (!a.size.empty() && !a.sweep.empty()) throw UsageError("give --size or --sweep, not both");
  auto parse = [](const std::string& opt, const std::string& s) {
    try {
      const Bytes b = parse_bytes(s);
      if (b.count() <= 0) throw UsageError(fmt::format("{}: the size must be greater than zero", opt));
      return b;
    } catch (const ParseError& e) {
      throw UsageError(fmt::format("{}: {}", opt, e.what()));
    }
  };
  if (!a.size.empty()) return {parse("--size", a.size)};
  if (a.sweep.empty()) throw UsageError("give --size (e.g. 1GiB) or --sweep (e.g. 8B:8GiB)");
  const auto colon = a.sweep.find(':');
  if (colon == std::string::npos) throw UsageError("--sweep is LOW:HIGH, e.g. 8B:8GiB (sizes double)");
  const Bytes lo = parse("--sweep", a.sweep.substr(0, colon));
  const Bytes hi = parse("--sweep", a.sweep.substr(colon + 1));
  if (hi < lo) throw UsageError("--sweep: HIGH is below LOW");
  std::vector<Bytes> out;
  for (Bytes s = lo; s <= hi; s = s * 2) {
    out.push_back(s);
    if (s.count() > (std::int64_t{1} << 61)) break;
  }
  return out;
}

void run_collective(CollectiveArgs& a) {
  topology::Topology topo = a.topology.load();
  a.calibration.apply(topo);
  const topology::DeviceMesh mesh = topology::select_mesh(topo, a.group);
  const std::vector<topology::NodeId> ring = sim::ring_order(topo, mesh.devices);
  const auto n = static_cast<double>(ring.size());
  if (ring.size() < 2) throw UsageError("a collective needs at least 2 GPUs in --group");
  const std::vector<Bytes> sizes = sizes_of(a);
  std::vector<std::string> names;
  for (topology::NodeId g : ring) names.push_back(topo.node(g).name);
  // Channels: as NCCL, one ring per NIC when the group spans hosts (the
  // fewest NICs any of its hosts has), so that every NIC carries a ring.
  int channels = a.channels;
  if (channels == 0) {
    channels = 1;
    std::set<int> hosts;
    for (topology::NodeId g : ring) hosts.insert(topo.node(g).host);
    if (hosts.size() > 1) {
      std::size_t fewest = SIZE_MAX;
      for (int h : hosts) fewest = std::min(fewest, topo.host_nics(h).size());
      channels = static_cast<int>(std::clamp<std::size_t>(fewest, 1, 64));
    }
  }

  Json results = Json::array();
  Table tab({"size", "time", "algbw (GB/s)", "busbw (GB/s)"});
  for (const Bytes size : sizes) {
    sim::Plan plan;
    plan.name = a.op;
    auto add = [&](sim::Task t) {
      t.id = fmt::format("t{}", plan.tasks.size());
      t.size = size;
      plan.tasks.push_back(std::move(t));
    };
    if (a.op == "broadcast") {
      sim::Task t;
      t.kind = sim::TaskKind::broadcast;
      t.devices = names;  // chain in ring order: enters each host once
      add(t);
    } else if (a.op == "sendrecv") {
      // Every rank sends to the next one on the ring at the same time.
      for (std::size_t k = 0; k < names.size(); ++k) {
        sim::Task t;
        t.kind = sim::TaskKind::send;
        t.devices = {names[k], names[(k + 1) % names.size()]};
        t.stream = static_cast<int>(k % 2);  // a rank both sends and receives
        add(t);
      }
    } else {
      sim::Task t;
      t.kind = sim::TaskKind::collective;
      t.op = a.op == "allreduce"       ? sim::CollectiveOp::all_reduce
             : a.op == "allgather"     ? sim::CollectiveOp::all_gather
             : a.op == "reducescatter" ? sim::CollectiveOp::reduce_scatter
                                       : sim::CollectiveOp::all_to_all;
      t.algorithm = a.algorithm == "direct" ? sim::CollectiveAlgo::direct : sim::CollectiveAlgo::ring;
      t.channels = channels;
      t.devices = names;
      add(t);
    }
    const sim::SimResult r = sim::simulate(plan, topo);
    const double secs = r.makespan.seconds();
    const double algbw = static_cast<double>(size.count()) / secs / 1e9;
    const double busbw = algbw * bus_factor(a.op, n);
    results.push_back(
        Json{{"size_bytes", size.count()}, {"time_s", secs}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw}});
    tab.add({human_string(size), human_string(r.makespan), fmt::format("{:.2f}", algbw),
             fmt::format("{:.2f}", busbw)});
  }
  if (a.json) {
    fmt::print("{}", dump_json(Json{{"op", a.op},
                                    {"topology", topo.name},
                                    {"group", names},
                                    {"algorithm", a.algorithm},
                                    {"channels", channels},
                                    {"results", std::move(results)}}));
    return;
  }
  fmt::print("{} over {} GPUs of {} ({}, {} channel{}), ring order: {}\n\n", a.op, ring.size(), topo.name,
             a.algorithm, channels, channels == 1 ? "" : "s", fmt::join(names, " "));
  fmt::print("{}", tab.render({true, true, true, true}));
}

}  // namespace

void add_sim_commands(CLI::App& app) {
  {
    auto a = std::make_shared<SimulateArgs>();
    auto* cmd = app.add_subcommand("simulate", "Simulate a plan (meshsim.plan/1) on a topology");
    cmd->add_option("plan", a->plan, "Plan file (meshsim.plan/1)")->required();
    a->topology.add_to(*cmd, "--topology");
    a->calibration.add_to(*cmd);
    cmd->add_option("--trace", a->trace, "Write a Chrome/Perfetto trace (open in ui.perfetto.dev)");
    cmd->add_option("--csv", a->csv, "Write one row per task");
    cmd->add_option("--top", a->top, "How many busiest links to list (default 5)")
        ->check(CLI::Range(1, 1000));
    cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
    cmd->callback([a] { run_simulate(*a); });
  }
  {
    auto a = std::make_shared<CollectiveArgs>();
    auto* cmd = app.add_subcommand(
        "collective",
        "Time a collective like nccl-tests: size, time, algbw, busbw (reference/hardware.md §3)");
    cmd->add_option("op", a->op, "allreduce, allgather, reducescatter, alltoall, broadcast or sendrecv")
        ->required()
        ->check(
            CLI::IsMember({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"}));
    a->topology.add_to(*cmd, "--topology");
    a->calibration.add_to(*cmd);
    cmd->add_option("--group", a->group, "GPUs taking part, a mesh selector (default: all)");
    cmd->add_option("--size", a->size, "One size, e.g. 1GiB (all-gather/reduce-scatter: the whole array)");
    cmd->add_option("--sweep", a->sweep, "Sizes LOW:HIGH doubling, e.g. 8B:8GiB");
    cmd->add_option("--algorithm", a->algorithm, "ring (default) or direct")
        ->check(CLI::IsMember({"ring", "direct"}));
    cmd->add_flag("--json", a->json, "Print {\"results\": [...]} instead of a table");
    cmd->callback([a] { run_collective(*a); });
  }
}

}  // namespace meshsim::cli
