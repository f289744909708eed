// The host backend's copy throughput (loading and verifying excluded): the
// strided example plan, a single large contiguous copy (memcpy-bound), and
// the cost of writing the initial images (pattern fill) that run_plan adds.

#include <benchmark/benchmark.h>

#include "plan/plan_json.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/layout.h"
#include "runtime/work.h"

using namespace meshsim;

static void BM_HostStridedTiles(benchmark::State& state) {
  const auto plan = plan::load_plan_file(MESHSIM_SOURCE_DIR "/configs/plans/strided-tiles.json");
  auto backend = runtime::make_host_backend({.threads = 2, .compute_time = {}});
  const auto work = runtime::lower(plan);
  const auto schedule = plan::make_schedule(plan, "<plan>");
  backend->load(plan, schedule, work, runtime::initial_images(plan));
  for (auto _ : state) {
    auto r = backend->run(plan, schedule);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(state.iterations() * work.payload_bytes);
}
BENCHMARK(BM_HostStridedTiles)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_HostContiguous256MiB(benchmark::State& state) {
  plan::Plan p;
  p.name = "big";
  p.tensors.push_back({"T", {64 << 20}, plan::DType::f32});
  p.devices = {"h0/gpu0", "h0/gpu1"};
  p.buffers.push_back({"a", 0, Bytes::MiB(256), 0, {{0, 64 << 20}}});
  p.buffers.push_back({"b", 1, Bytes::MiB(256), 0, {{0, 64 << 20}}});
  plan::Task t;
  t.id = "copy";
  t.kind = plan::TaskKind::send;
  t.devices = {0, 1};
  t.size = Bytes::MiB(256);
  t.payload.push_back({0, {{0, 64 << 20}}, 0, Bytes(0), 1, Bytes(0)});
  p.tasks.push_back(t);
  auto backend = runtime::make_host_backend({.threads = 2, .compute_time = {}});
  const auto schedule = plan::make_schedule(p, "<plan>");
  backend->load(p, schedule, runtime::lower(p), runtime::initial_images(p));
  for (auto _ : state) {
    auto r = backend->run(p, schedule);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(state.iterations() * Bytes::MiB(256).count());
}
BENCHMARK(BM_HostContiguous256MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_InitialImagesStridedTiles(benchmark::State& state) {
  const auto plan = plan::load_plan_file(MESHSIM_SOURCE_DIR "/configs/plans/strided-tiles.json");
  for (auto _ : state) {
    auto img = runtime::initial_images(plan);
    benchmark::DoNotOptimize(img);
  }
  state.SetBytesProcessed(state.iterations() * Bytes::KiB(7680).count());
}
BENCHMARK(BM_InitialImagesStridedTiles)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
