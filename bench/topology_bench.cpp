// Topology construction and routing speed. Run:
//   build/release/bench/bench_topology
// Routing matters for the simulator: every flow needs a route; routes are
// cached, so the figure that counts is the first (uncached) computation.

#include <benchmark/benchmark.h>

#include "core/units.h"
#include "topology/cluster.h"
#include "topology/topology.h"

using namespace meshsim;
using namespace meshsim::topology;

namespace {

ClusterSpec fat_tree_1024() {
  // 128 × dgx-a100 = 1,024 GPUs, 32 NICs per leaf: 32 leaves, 32 spines.
  ClusterSpec s;
  s.host_preset = "dgx-a100";
  s.hosts = 128;
  s.fabric.kind = FabricKind::fat_tree;
  return s;
}

void BM_BuildCluster1024(benchmark::State& state) {
  const ClusterSpec s = fat_tree_1024();
  for (auto _ : state) benchmark::DoNotOptimize(build_cluster(s));
}
BENCHMARK(BM_BuildCluster1024)->Unit(benchmark::kMillisecond);

// Uncached routes between GPUs of different hosts (a fresh topology per
// batch, so each route is computed once).
void BM_RouteUncached1024(benchmark::State& state) {
  const ClusterSpec s = fat_tree_1024();
  std::int64_t routes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const Topology t = build_cluster(s);
    (void)t.nic_of(t.gpus().front());  // NIC assignment is once per topology: not timed
    state.ResumeTiming();
    const auto& g = t.gpus();
    for (std::size_t i = 0; i < 1000; ++i) {
      benchmark::DoNotOptimize(t.route(g[(i * 7919) % g.size()], g[(i * 104729 + 13) % g.size()]));
      ++routes;
    }
  }
  state.SetItemsProcessed(routes);
}
BENCHMARK(BM_RouteUncached1024)->Unit(benchmark::kMillisecond);

void BM_RouteCached(benchmark::State& state) {
  const Topology t = build_cluster(fat_tree_1024());
  const NodeId a = t.gpus().front();
  const NodeId b = t.gpus().back();
  (void)t.route(a, b);
  for (auto _ : state) benchmark::DoNotOptimize(t.route(a, b));
}
BENCHMARK(BM_RouteCached);

// The once-per-topology NIC assignment (a PCIe search from every GPU).
void BM_AssignNics1024(benchmark::State& state) {
  const ClusterSpec s = fat_tree_1024();
  for (auto _ : state) {
    state.PauseTiming();
    const Topology t = build_cluster(s);
    state.ResumeTiming();
    benchmark::DoNotOptimize(t.nic_of(t.gpus().front()));
  }
}
BENCHMARK(BM_AssignNics1024)->Unit(benchmark::kMillisecond);

void BM_TransferTime(benchmark::State& state) {
  std::int64_t n = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(transfer_time(Bytes(n), Bandwidth::Gbps(400)));
    n = n * 3 % 2'147'483'647;
  }
}
BENCHMARK(BM_TransferTime);

}  // namespace

BENCHMARK_MAIN();
