// `meshsim collective`: one collective timed like nccl-tests, with the
// algorithm, protocol and channels the collective table selects (or forces).

#include <memory>
#include <optional>

#include <fmt/format.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "plan/collective.h"
#include "plan/nccl_tests.h"
#include "sim/executor.h"
#include "sim/nccl_fit.h"
#include "sim/profiles.h"
#include "sim/ring_order.h"
#include "tools/cli/bottlenecks.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/topology_source.h"
#include "topology/mesh.h"
#include "topology/placement.h"

namespace meshsim::cli {

namespace {

struct CollectiveArgs {
  std::string op;
  TopologySource topology;
  CalibrationOption calibration;
  std::string group = "all";
  std::string size;
  std::string sweep;
  std::string algorithm = "auto";
  std::string protocol = "auto";
  int channels = 0;
  std::size_t top = 5;
  bool json = false;
  bool verbose = false;
  bool nccl_tests = false;
  bool uncertainty = false;
  std::string plot;
};

std::vector<Bytes> sizes_of(const CollectiveArgs& a) {
  if (!a.size.empty() && !a.sweep.empty()) throw UsageError("give --size or --sweep, not both");
  auto parse = [](const std::string& opt, const std::string& s) {
    const Bytes b = option_value(opt, s, parse_bytes);
    if (b.count() <= 0) throw UsageError(fmt::format("{}: the size must be greater than zero", opt));
    return b;
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

// The collective of one sweep, as nccl-tests runs it.
sim::NcclTestSpec spec_of(const CollectiveArgs& a) {
  sim::NcclTestSpec spec;
  spec.op = a.op;
  spec.algorithm = plan::algorithm_from(a.algorithm);
  spec.protocol = plan::protocol_from(a.protocol);
  spec.channels = a.channels;
  return spec;
}

struct Row {
  Bytes size;
  sim::SimResult result;
  std::optional<sim::CollectiveChoice> choice;
  std::optional<std::pair<Time, Time>> band;  // --uncertainty: (fast, slow)
};

std::string choice_text(const Row& r) {
  if (!r.choice) return "-";
  return fmt::format("{}/{}/{}", plan::to_string(r.choice->algorithm), plan::to_string(r.choice->protocol),
                     r.choice->channels);
}

// Where the selected algorithm changes between consecutive sizes.
Json crossovers(const std::vector<Row>& rows) {
  Json out = Json::array();
  for (std::size_t k = 1; k < rows.size(); ++k) {
    if (!rows[k].choice || !rows[k - 1].choice) continue;
    if (rows[k].choice->algorithm == rows[k - 1].choice->algorithm) continue;
    out.push_back(Json{{"from", std::string(plan::to_string(rows[k - 1].choice->algorithm))},
                       {"to", std::string(plan::to_string(rows[k].choice->algorithm))},
                       {"below_bytes", rows[k - 1].size.count()},
                       {"at_bytes", rows[k].size.count()}});
  }
  return out;
}

// Bus bandwidth against size (`busbw`, GB/s, one per row), drawn by
// tools/plot_compare.py into `png`.
void plot_sweep(const std::string& png, const std::string& topo_name, const std::vector<Row>& rows,
                const std::vector<double>& busbw, bool say) {
  std::string csv = "\"topology\",\"size\",\"busbw GB/s\"\n";
  for (std::size_t i = 0; i < rows.size(); ++i)
    csv += fmt::format("{},{},{}\n", csv_quoted(topo_name), csv_quoted(human_string(rows[i].size)), busbw[i]);
  draw_chart("plot_compare.py", csv, {png}, png);
  if (say) fmt::print("chart: {}\n\n", png);
}

// A row's algorithm and bus bandwidth in GB/s over `n` ranks, as nccl-tests defines them.
struct Bandwidths {
  double algbw;
  double busbw;
};
Bandwidths bandwidths(const std::string& op, const Row& r, std::int64_t n) {
  const double algbw = static_cast<double>(r.size.count()) / r.result.makespan.seconds() / 1e9;
  return {algbw, plan::op_from(op) ? algbw * plan::bus_factor(*plan::op_from(op), n) : algbw};
}

// The sweep as nccl-tests prints it: rank k on ring GPU k ("h1/gpu3": host
// h1, device 3), 4-byte floats, the in-place columns the same as the others.
plan::NcclTestsRun as_nccl_tests(const CollectiveArgs& a, const topology::Topology& topo,
                                 const std::vector<std::string>& ring, const std::vector<Row>& rows) {
  plan::NcclTestsRun run;
  run.op = a.op;
  run.test = plan::nccl_tests_name(a.op);
  const auto n = static_cast<std::int64_t>(ring.size());
  for (std::size_t k = 0; k < ring.size(); ++k) {
    const std::string& name = ring[k];
    const auto slash = name.find('/');
    const auto digits = name.find_last_not_of("0123456789");
    const int device = digits + 1 < name.size() ? std::stoi(name.substr(digits + 1)) : static_cast<int>(k);
    run.ranks.push_back({static_cast<int>(k), slash == std::string::npos ? "host" : name.substr(0, slash),
                         device, topo.node(topo.at(name)).model});
  }
  const bool split = a.op == "allgather" || a.op == "reducescatter" || a.op == "alltoall";
  const bool reduces = a.op == "allreduce" || a.op == "reducescatter";
  for (const Row& r : rows) {
    const Bandwidths bw = bandwidths(a.op, r, n);
    run.rows.push_back({r.size, r.size.count() / 4 / (split ? n : 1), "float", reduces ? "sum" : "none",
                        a.op == "broadcast" ? 0 : -1, r.result.makespan, bw.algbw, bw.busbw,
                        r.result.makespan});
  }
  return run;
}

void print_rows(const CollectiveArgs& a, const topology::Topology& topo, const std::vector<Row>& rows,
                std::size_t n) {
  Json results = Json::array();
  const bool banded = !rows.empty() && rows.front().band.has_value();
  std::vector<std::string> head{"size", "time", "algbw (GB/s)", "busbw (GB/s)",
                                "algorithm/protocol/channels"};
  if (banded) head.insert(head.begin() + 2, "band (fast to slow)");
  Table tab(head);
  bool spread = false;
  std::vector<double> busbw;
  for (const auto& r : rows) {
    const auto [algbw, bus] = bandwidths(a.op, r, static_cast<std::int64_t>(n));
    Json o{{"size_bytes", r.size.count()},
           {"time_s", r.result.makespan.seconds()},
           {"algbw_GBps", algbw},
           {"busbw_GBps", bus}};
    if (r.band) {
      o["band"] = Json{{"fast_s", r.band->first.seconds()}, {"slow_s", r.band->second.seconds()}};
      spread = spread || r.band->first != r.band->second;
    }
    if (r.choice) {
      o["algorithm"] = std::string(plan::to_string(r.choice->algorithm));
      o["protocol"] = std::string(plan::to_string(r.choice->protocol));
      o["channels"] = r.choice->channels;
    }
    results.push_back(std::move(o));
    busbw.push_back(bus);
    std::vector<std::string> row{human_string(r.size), human_string(r.result.makespan),
                                 fmt::format("{:.2f}", algbw), fmt::format("{:.2f}", bus), choice_text(r)};
    if (r.band)
      row.insert(row.begin() + 2,
                 fmt::format("{} to {}", human_string(r.band->first), human_string(r.band->second)));
    tab.add(row);
  }
  if (!a.plot.empty()) plot_sweep(a.plot, topo.name, rows, busbw, !a.json);
  const Json cross = crossovers(rows);
  if (a.json) {
    fmt::print("{}", dump_json(Json{{"op", a.op},
                                    {"topology", topo.name},
                                    {"gpus", n},
                                    {"routing", std::string(topology::to_string(topo.routing))},
                                    {"placement", topology::placement_of(topo)},
                                    {"results", std::move(results)},
                                    {"crossovers", cross},
                                    {"bottlenecks", bottlenecks_json(topo, rows.back().result, a.top)}}));
    return;
  }
  std::vector<bool> right{true, true, true, true, false};
  if (banded) right.insert(right.begin() + 2, true);
  fmt::print("{}", tab.render(right));
  if (banded && !spread)
    fmt::print("(no link figure has a spread: a calibration fitted to nccl-tests output gives them one)\n");
  for (const auto& c : cross)
    fmt::print("algorithm changes from {} to {} between {} and {}\n", c["from"].get<std::string>(),
               c["to"].get<std::string>(), human_string(Bytes(c["below_bytes"].get<std::int64_t>())),
               human_string(Bytes(c["at_bytes"].get<std::int64_t>())));
  fmt::print("\nat {}:\n{}", human_string(rows.back().size),
             bottlenecks_table(topo, rows.back().result, a.top));
}

void run_collective(CollectiveArgs& a) {
  topology::Topology topo = a.topology.load();
  a.calibration.apply(topo);
  const std::string placed = topology::place_selected(topo, {a.group});  // the group names the job's hosts
  const topology::DeviceMesh mesh = topology::select_mesh(topo, a.group);
  const std::vector<topology::NodeId> ring = sim::ring_order(topo, mesh.devices);
  if (ring.size() < 2) throw UsageError("a collective needs at least 2 GPUs in --group");
  const std::vector<Bytes> sizes = sizes_of(a);
  std::vector<std::string> names;
  for (topology::NodeId g : ring) names.push_back(topo.node(g).name);
  std::vector<Row> rows;
  for (const Bytes size : sizes) {
    const plan::Plan plan = sim::nccl_test_plan(spec_of(a), names, size);
    Row r{size, sim::simulate(plan, topo), std::nullopt, std::nullopt};
    if (plan.tasks.front().kind == plan::TaskKind::collective) r.choice = r.result.collectives.front();
    rows.push_back(std::move(r));
  }
  if (a.uncertainty) {  // the links at the fast, then the slow end of the calibration's spreads
    for (const auto end : {sim::SpreadEnd::high, sim::SpreadEnd::low}) {
      a.calibration.apply(topo, end);
      for (Row& r : rows) {
        const Time t = sim::simulate(sim::nccl_test_plan(spec_of(a), names, r.size), topo).makespan;
        if (end == sim::SpreadEnd::high)
          r.band = {t, t};
        else
          r.band->second = t;
      }
    }
    a.calibration.apply(topo);
  }
  if (!a.json && !a.nccl_tests) {
    const std::size_t shown = a.verbose ? names.size() : std::min<std::size_t>(names.size(), 16);
    fmt::print(
        "{} over {} GPUs of {} (routing {}), ring order {}{}\n\n", a.op, ring.size(), topo.name,
        topology::to_string(topo.routing),
        fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), " "),
        shown < names.size() ? fmt::format(" ... ({} more; --verbose lists all)", names.size() - shown) : "");
    if (!placed.empty()) fmt::print("placement {}\n\n", placed);
  }
  if (a.nccl_tests) {
    fmt::print("{}", plan::nccl_tests_text(as_nccl_tests(a, topo, names, rows)));
    return;
  }
  print_rows(a, topo, rows, ring.size());
}

// "auto" and the table's names of `values`.
template <typename Values>
std::vector<std::string> with_auto(const Values& values) {
  std::vector<std::string> out{"auto"};
  for (auto v : values) out.emplace_back(plan::to_string(v));
  return out;
}

}  // namespace

void add_collective_command(CLI::App& app) {
  auto a = std::make_shared<CollectiveArgs>();
  auto* cmd = app.add_subcommand(
      "collective",
      "Time a collective like nccl-tests (size, time, algbw, busbw) with NCCL's algorithms and protocols");
  std::vector<std::string> ops = plan::kOpNames.aliases();
  ops.emplace_back("broadcast");
  ops.emplace_back("sendrecv");
  cmd->add_option("op", a->op, fmt::format("{}", fmt::join(ops, ", ")))
      ->required()
      ->check(CLI::IsMember(ops));
  a->topology.add_to(*cmd, "--topology");
  a->topology.add_placement_to(*cmd);
  a->calibration.add_to(*cmd);
  cmd->add_option("--group", a->group, "GPUs taking part, a mesh selector (default: all)");
  cmd->add_option("--size", a->size, "One size, e.g. 1GiB (all-gather/reduce-scatter: the whole array)");
  cmd->add_option("--sweep", a->sweep, "Sizes LOW:HIGH doubling, e.g. 8B:8GiB");
  cmd->add_option("--algorithm", a->algorithm,
                  "auto (default: the fastest by NCCL's cost model) or one of " + plan::algorithm_names())
      ->check(CLI::IsMember(with_auto(plan::kAlgorithms)));
  cmd->add_option("--protocol", a->protocol, "auto (default) or one of " + plan::protocol_names())
      ->check(CLI::IsMember(with_auto(plan::kProtocols)));
  cmd->add_option("--channels", a->channels,
                  "Parallel rings/trees (default 0: one per NIC when the group spans hosts, else 1)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--top", a->top, "How many bottleneck links to list (default 5)")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->add_flag("--verbose", a->verbose, "Print the whole ring order (the first 16 GPUs otherwise)");
  cmd->add_flag("--nccl-tests", a->nccl_tests,
                "Print the prediction as nccl-tests prints its measurements (all_reduce_perf's layout), to "
                "set beside a real run's output or fit with `meshsim calibrate --from-nccl-tests`")
      ->excludes("--json");
  cmd->add_flag("--uncertainty", a->uncertainty,
                "Also time every size with the calibration's link figures at the fast and the slow end of "
                "their spreads (a calibration from --from-nccl-tests has them), as a band");
  cmd->add_option("--plot", a->plot, "Draw bus bandwidth against size into this PNG (with --sweep)")
      ->check(output_file());
  cmd->callback([a] { run_collective(*a); });
}

}  // namespace meshsim::cli
