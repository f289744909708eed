// Simulation-core speed. Run: build/release/bench/bench_sim
//
// Targets (issue 3): the bare engine >= 10 million events/s; 10,000
// concurrent flows between random GPU pairs on a 1,024-GPU two-level fat
// tree simulated to completion in <= 2 s on the 2-core CI machine.
// The 100,000-flow case takes minutes; skip it with
//   --benchmark_filter='Engine|/1000/|/10000/'

#include <random>

#include <benchmark/benchmark.h>

#include "sim/engine.h"
#include "sim/flow_network.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::topology;

namespace {

// Each event schedules one more at a pseudo-random later time, keeping
// `pending` events in the queue.
struct Chain final : EventHandler {
  Engine* engine = nullptr;
  std::uint64_t left = 0;
  std::uint64_t x = 88172645463325252ULL;
  void on_event(Time now, std::uint32_t, std::uint32_t) override {
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
    Engine e;
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

// 128 x DGX-A100 = 1,024 GPUs; 32 NICs per leaf: 32 leaves, 32 spines.
const Topology& fat_tree_1024() {
  static const Topology t = [] {
    ClusterSpec s;
    s.host_preset = "dgx-a100";
    s.hosts = 128;
    s.fabric.kind = FabricKind::fat_tree;
    return build_cluster(s);
  }();
  return t;
}

// N flows of 64 MiB between random GPU pairs (seed 1), all started at 0,
// simulated to completion (routes are cached after the first iteration).
void BM_RandomFlowsFatTree1024(benchmark::State& state) {
  const Topology& t = fat_tree_1024();
  const auto n = static_cast<std::size_t>(state.range(0));
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::size_t> pick(0, t.gpus().size() - 1);
  std::vector<std::pair<NodeId, NodeId>> pairs;
  while (pairs.size() < n) {
    const NodeId a = t.gpus()[pick(rng)];
    const NodeId b = t.gpus()[pick(rng)];
    if (a != b) pairs.emplace_back(a, b);
  }
  std::uint64_t events = 0;
  std::uint64_t recomputations = 0;
  std::uint64_t rerated = 0;
  std::uint64_t pops = 0;
  for (auto _ : state) {
    Engine e;
    FlowNetwork net(e, t);
    for (const auto& [a, b] : pairs) net.start(t.route(a, b), Bytes::MiB(64));
    e.run();
    events = e.events_processed();
    recomputations = net.recomputations();
    rerated = net.rerated_flows();
    pops = net.heap_pops();
    benchmark::DoNotOptimize(e.now());
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["recomputations"] = static_cast<double>(recomputations);
  state.counters["rerated_flows"] = static_cast<double>(rerated);
  state.counters["heap_pops"] = static_cast<double>(pops);
}
BENCHMARK(BM_RandomFlowsFatTree1024)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
