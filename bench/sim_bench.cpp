// Simulation-core speed. Run: build/release/bench/bench_sim
//
// Targets (docs/performance.md keeps the measured figures): the bare engine
// >= 40 million events/s with 16 pending; flows of random sizes and start
// times on a 1,024-GPU tree (below): 10,000 in <= 0.5 s and <= 100 MB,
// 100,000 in <= 10 s and <= 2 GB. Pick cases with --benchmark_filter, e.g.
// 'Engine|MaxMin|/1000/|/10000/', and run one case per process for its
// peak memory (peak_rss_MB is the process's).
//
// The realistic case (RandomSizesAndStarts): flows of random sizes (1-256
// MiB) between random GPU pairs, starting at random times over 10 ms, on
// the same 1,024 GPUs with 4:1 oversubscribed leaf uplinks: every start
// and end is its own instant, so events do not batch. MaxMinRates times the
// pure solver (sim/kernel/maxmin.h) on the rates of N such flows at once. The
// counters (sim/kernel/bottleneck_structure.h, sim/kernel/flow_groups.h): solves (one
// per instant with a change), repairs (links repaired), pushes (out-edges
// a level change moved), moves (flows whose bottleneck moved), takes
// (in-edges taken in), joins (links that joined the structure), trips
// (levels that rose past their passive out-edges' allowance), rebuilds
// (batches solved afresh), levels (level changes), retimed (groups whose
// rate or members changed; their timers move only when sooner: early
// firings count as events); digest, a hash of every flow's completion time.
//
// MESHSIM_COMPLETIONS=FILE writes each flow case's completion times to
// FILE (overwritten by each case: filter one case per run), one line per
// flow in the order the case draws them, in picoseconds:
// bench/compare_completions.sh compares two builds with it.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sys/resource.h>

#include <benchmark/benchmark.h>

#include "sim/flow_network.h"
#include "sim/kernel/engine.h"
#include "sim/kernel/maxmin.h"
#include "topology/cluster.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::topology;

namespace {

// Each event schedules one more at a pseudo-random later time, keeping
// `pending` events in the queue.
struct Chain final : sim::kernel::EventHandler {
  sim::kernel::Engine* engine = nullptr;
  std::uint64_t left = 0;
  std::uint64_t x = 88172645463325252ULL;
  void on_event(Time now, std::uint32_t) override {
    if (left == 0) return;
    --left;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    engine->schedule(now + Time::ps(static_cast<std::int64_t>(1 + x % 1000)), this);
  }
};

void BM_EngineEvents(benchmark::State& state) {
  const auto pending = static_cast<std::uint64_t>(state.range(0));
  constexpr std::uint64_t kEvents = 2'000'000;
  for (auto _ : state) {
    sim::kernel::Engine e;
    Chain c;
    c.engine = &e;
    c.left = kEvents;
    for (std::uint64_t i = 0; i < pending; ++i) e.schedule(Time::ps(static_cast<std::int64_t>(i)), &c);
    e.run();
    benchmark::DoNotOptimize(e.events_processed());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kEvents + pending));
}
BENCHMARK(BM_EngineEvents)->Arg(16)->Arg(1024)->Arg(65536)->Unit(benchmark::kMillisecond);

// 128 x dgx-a100 = 1,024 GPUs on a fat tree, 32 NICs per leaf (32 leaves),
// leaf uplinks oversubscribed `ratio`:1.
Topology tree_1024(double ratio) {
  ClusterSpec s;
  s.host_preset = "dgx-a100";
  s.hosts = 128;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.oversubscription = ratio;
  return build_cluster(s);
}

struct RandomFlow {
  NodeId a = 0;
  NodeId b = 0;
  Bytes size;
  Time start;
};

// Starts flow `payload` of a list when its start time comes, and keeps a
// digest of the completion times (to check that a change to the solver
// leaves every one of them as it was).
struct Starter final : sim::kernel::EventHandler, FlowClient {
  const Topology* t = nullptr;
  FlowNetwork* net = nullptr;
  const std::vector<RandomFlow>* flows = nullptr;
  std::uint64_t digest = 0;
  void on_event(Time, std::uint32_t i) override {
    const RandomFlow& f = (*flows)[i];
    net->start(t->route(f.a, f.b), f.size, {this, i});
  }
  std::vector<std::int64_t> done;  // per flow, its completion (ps)
  void flow_done(FlowId, std::uint64_t tag, Time now) override {
    done[tag] = now.count_ps();
    digest += (tag + 1) * static_cast<std::uint64_t>(now.count_ps());
  }
};

// The completion times, one line each, to MESHSIM_COMPLETIONS if set.
void write_completions(const std::vector<std::int64_t>& done) {
  const char* path = std::getenv("MESHSIM_COMPLETIONS");
  if (path == nullptr) return;
  std::ofstream out(path);
  for (const std::int64_t ps : done) out << ps << '\n';
  if (!out.flush()) {
    std::fprintf(stderr, "bench_sim: cannot write MESHSIM_COMPLETIONS file %s\n", path);
    std::exit(2);
  }
}

// Simulates `flows` on `t` to completion, each started at its time (routes
// cached before the timing); counters: events, the solver's, peak memory.
void run_flows(benchmark::State& state, const Topology& t, const std::vector<RandomFlow>& flows) {
  for (const RandomFlow& f : flows) (void)t.route(f.a, f.b);
  std::uint64_t events = 0;
  std::uint64_t digest = 0;
  sim::kernel::BottleneckStructure::Stats s;
  sim::kernel::FlowGroups::Stats g;
  for (auto _ : state) {
    sim::kernel::Engine e;
    FlowNetwork net(e, t);
    Starter starter;
    starter.t = &t;
    starter.net = &net;
    starter.flows = &flows;
    starter.done.assign(flows.size(), -1);
    for (std::uint32_t i = 0; i < flows.size(); ++i) e.schedule(flows[i].start, &starter, i);
    e.run();
    events = e.events_processed();
    digest = starter.digest;
    write_completions(starter.done);
    s = net.structure_stats();
    g = net.group_stats();
    benchmark::DoNotOptimize(e.now());
  }
  state.counters["events"] = static_cast<double>(events);
  state.SetLabel("digest " + std::to_string(digest));
  state.counters["solves"] = static_cast<double>(g.solves);
  state.counters["repairs"] = static_cast<double>(s.repairs);
  state.counters["pushes"] = static_cast<double>(s.pushes);
  state.counters["moves"] = static_cast<double>(s.moves);
  state.counters["takes"] = static_cast<double>(s.takes);
  state.counters["joins"] = static_cast<double>(s.joins);
  state.counters["trips"] = static_cast<double>(s.trips);
  state.counters["rebuilds"] = static_cast<double>(s.rebuilds);
  state.counters["levels"] = static_cast<double>(s.level_changes);
  state.counters["retimed"] = static_cast<double>(g.retimed);
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  state.counters["peak_rss_MB"] = static_cast<double>(u.ru_maxrss) / 1024.0;
}

// N distinct-pair flows between random GPUs (seed `seed`), each of size(rng)
// bytes, starting at start(rng).
template <typename Size, typename Start>
std::vector<RandomFlow> random_flows(const Topology& t, std::size_t n, std::uint64_t seed, Size size,
                                     Start start) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, t.gpus().size() - 1);
  std::vector<RandomFlow> out;
  while (out.size() < n) {
    const NodeId a = t.gpus()[pick(rng)];
    const NodeId b = t.gpus()[pick(rng)];
    if (a != b) out.push_back({a, b, size(rng), start(rng)});
  }
  return out;
}

// Non-blocking: 32 spines.
const Topology& fat_tree_1024() {
  static const Topology t = tree_1024(1);
  return t;
}

// N flows of 64 MiB between random GPU pairs (seed 1), all started at 0.
void BM_RandomFlowsFatTree1024(benchmark::State& state) {
  const Topology& t = fat_tree_1024();
  run_flows(state, t,
            random_flows(
                t, static_cast<std::size_t>(state.range(0)), 1, [](auto&) { return Bytes::MiB(64); },
                [](auto&) { return Time::zero(); }));
}
BENCHMARK(BM_RandomFlowsFatTree1024)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

const Topology& oversubscribed_1024() {
  static const Topology t = tree_1024(4);
  return t;
}

// N flows (seed 7): random distinct GPU pairs, sizes uniform in 1-256 MiB,
// starts uniform in [0, 10 ms).
std::vector<RandomFlow> random_sized_flows(const Topology& t, std::size_t n) {
  std::uniform_int_distribution<std::int64_t> size(Bytes::MiB(1).count(), Bytes::MiB(256).count());
  std::uniform_int_distribution<std::int64_t> start(0, Time::ms(10).count_ps() - 1);
  return random_flows(
      t, n, 7, [&](std::mt19937_64& rng) { return Bytes(size(rng)); },
      [&](std::mt19937_64& rng) { return Time::ps(start(rng)); });
}

void BM_RandomSizesAndStarts(benchmark::State& state) {
  run_flows(state, oversubscribed_1024(),
            random_sized_flows(oversubscribed_1024(), static_cast<std::size_t>(state.range(0))));
}
BENCHMARK(BM_RandomSizesAndStarts)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(20000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The same flows (random pairs, 1-256 MiB, starts over 10 ms) on 1,024
// one-GPU hosts, 8 per leaf, leaf uplinks 4:1: every flow crosses the
// fabric, and the 128 leaves' 256 uplinks to 2 spines are the bottlenecks
// (configs/topologies/one-gpu-x1024-4to1.json).
const Topology& one_gpu_per_host_1024() {
  static const Topology t =
      load_topology_file(MESHSIM_SOURCE_DIR "/configs/topologies/one-gpu-x1024-4to1.json");
  return t;
}

void BM_OneGpuPerHost(benchmark::State& state) {
  run_flows(state, one_gpu_per_host_1024(),
            random_sized_flows(one_gpu_per_host_1024(), static_cast<std::size_t>(state.range(0))));
}
BENCHMARK(BM_OneGpuPerHost)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(1);

// The same random sizes on the same tree, every flow started at t = 0:
// one batch of N additions, then each end its own instant.
void BM_OneGpuPerHostTogether(benchmark::State& state) {
  auto flows = random_sized_flows(one_gpu_per_host_1024(), static_cast<std::size_t>(state.range(0)));
  for (RandomFlow& f : flows) f.start = Time::zero();
  run_flows(state, one_gpu_per_host_1024(), flows);
}
BENCHMARK(BM_OneGpuPerHostTogether)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The same random flows on a three-level fat tree of the same 1,024
// one-GPU hosts: 16 pods of 8 leaves, 4:1 at the leaves, 2:1 at the pod
// spines (configs/topologies/one-gpu-x1024-3level.json). Flows between pods
// (15 in 16) cross 4 fabric links beside their NICs: leaf and pod spine
// uplinks on the way up, their downlinks on the way down.
const Topology& three_level_1024() {
  static const Topology t =
      load_topology_file(MESHSIM_SOURCE_DIR "/configs/topologies/one-gpu-x1024-3level.json");
  return t;
}

void BM_ThreeLevelFatTree(benchmark::State& state) {
  run_flows(state, three_level_1024(),
            random_sized_flows(three_level_1024(), static_cast<std::size_t>(state.range(0))));
}
BENCHMARK(BM_ThreeLevelFatTree)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// All-to-all on a rail fabric: 32 DGX-H100 (256 GPUs, 8 rails), every GPU
// sends 16 MiB to every other one at t = 0 (65,280 flows over NVLink,
// rail leaves and spines), as an expert-parallel layer's exchange would
// without NCCL's pairing.
void BM_RailAllToAll(benchmark::State& state) {
  static const Topology t = [] {
    ClusterSpec s;
    s.host_preset = "dgx-h100";
    s.hosts = 32;
    s.fabric.kind = FabricKind::rail;
    return build_cluster(s);
  }();
  const auto hosts = static_cast<std::size_t>(state.range(0));
  std::vector<RandomFlow> flows;
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::int64_t> size(Bytes::MiB(15).count(), Bytes::MiB(17).count());
  const std::size_t gpus = 8 * hosts;
  for (std::size_t a = 0; a < gpus; ++a)
    for (std::size_t b = 0; b < gpus; ++b)
      if (a != b) flows.push_back({t.gpus()[a], t.gpus()[b], Bytes(size(rng)), Time::zero()});
  run_flows(state, t, flows);
}
BENCHMARK(BM_RailAllToAll)->Arg(4)->Arg(16)->Arg(32)->Unit(benchmark::kMillisecond)->Iterations(1);

// One solve of the rates of N random flows all active at once (their
// routes' links, capacities from the topology).
void BM_MaxMinRates(benchmark::State& state) {
  const Topology& t = oversubscribed_1024();
  const auto flows = random_sized_flows(t, static_cast<std::size_t>(state.range(0)));
  sim::kernel::MaxMinProblem p;
  std::vector<std::int64_t> local(2 * t.link_count(), -1);
  for (const RandomFlow& f : flows) {
    sim::kernel::MaxMinFlow mf;
    for (DirLinkId l : t.route(f.a, f.b).links()) {
      if (local[l] < 0) {
        local[l] = static_cast<std::int64_t>(p.capacity.size());
        p.capacity.push_back(t.link(Topology::link_of(l)).capacity().bytes_per_second_f());
      }
      mf.links.push_back(static_cast<std::uint32_t>(local[l]));
    }
    p.flows.push_back(std::move(mf));
  }
  for (auto _ : state) benchmark::DoNotOptimize(sim::kernel::max_min_rates(p));
  state.counters["links"] = static_cast<double>(p.capacity.size());
}
BENCHMARK(BM_MaxMinRates)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
