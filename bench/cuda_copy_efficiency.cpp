// The cuda backend's copy target, on a GPU machine: its region copies
// reach at least 85 % of the bandwidth of a plain back-to-back
// cudaMemcpyAsync loop of the same sizes.
//
// For each size S (1 MiB .. 1 GiB, x4): a plan of 8 sends of S bytes in a
// chain between two virtual devices (contiguous regions: one run each) runs
// through runtime::run_plan (median of 5 after a warm-up); the reference is
// 8 cudaMemcpyAsync of S bytes back to back on one stream, timed with
// events (best of 5). A second plan moves S as a strided 2-D region (half
// of every row of a 2-D tile). Prints both ratios per size; exits 1 if a
// contiguous ratio is under 0.85, 77 without a GPU.
//   build/release/bench/bench_cuda_copy [max size in MiB]

#include <algorithm>
#include <cstdlib>
#include <string>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "runtime/cuda_backend.h"
#include "runtime/executor.h"
#include "runtime/gpu_info.h"

using namespace meshsim;

namespace {

constexpr int kHops = 8;

plan::Plan chain(std::int64_t bytes, bool strided) {
  plan::Plan p;
  p.name = "chain";
  // f32 tensor of rows x 1024 (strided: rows x 2048, moving columns 0-1023).
  const std::int64_t cols = 1024;
  const std::int64_t rows = bytes / (cols * 4);
  const std::int64_t width = strided ? 2 * cols : cols;
  p.tensors.push_back({"T", {rows, width}, plan::DType::f32});
  const std::vector<std::pair<std::int64_t, std::int64_t>> all{{0, rows}, {0, width}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> box{{0, rows}, {0, cols}};
  p.devices = {"h0/gpu0", "h0/gpu1"};
  p.buffers.push_back({"a", 0, Bytes(rows * width * 4), 0, all});
  p.buffers.push_back({"b", 1, Bytes(rows * width * 4), 0, all});
  for (int k = 0; k < kHops; ++k) {
    plan::Task t;
    t.id = fmt::format("hop{}", k);
    t.kind = plan::TaskKind::send;
    t.devices = {0, 1};
    t.size = Bytes(rows * cols * 4);
    t.payload.push_back({0, box, 0, Bytes(0), 1, Bytes(0)});
    if (k > 0) t.deps = {static_cast<std::size_t>(k - 1)};
    p.tasks.push_back(t);
  }
  return p;
}

double memcpy_loop_seconds(std::int64_t bytes) {
  void* a = nullptr;
  void* b = nullptr;
  cudaStream_t s = nullptr;
  cudaEvent_t e0 = nullptr;
  cudaEvent_t e1 = nullptr;
  (void)cudaMalloc(&a, static_cast<std::size_t>(bytes));
  (void)cudaMalloc(&b, static_cast<std::size_t>(bytes));
  (void)cudaStreamCreate(&s);
  (void)cudaEventCreate(&e0);
  (void)cudaEventCreate(&e1);
  float best = 1e30F;
  for (int r = 0; r < 6; ++r) {
    (void)cudaEventRecord(e0, s);
    for (int k = 0; k < kHops; ++k)
      (void)cudaMemcpyAsync(b, a, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, s);
    (void)cudaEventRecord(e1, s);
    (void)cudaEventSynchronize(e1);
    float ms = 0;
    (void)cudaEventElapsedTime(&ms, e0, e1);
    if (r > 0) best = std::min(best, ms);
  }
  (void)cudaFree(a);
  (void)cudaFree(b);
  (void)cudaStreamDestroy(s);
  return static_cast<double>(best) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  const auto info = runtime::query_runtime();
  if (info.gpus.empty()) {
    fmt::print("skipped: {}\n", info.status);
    return 77;
  }
  const std::int64_t max_mib = argc > 1 ? std::atoll(argv[1]) : 1024;
  fmt::print("GPU 0: {}\n{:>10} {:>14} {:>14} {:>14} {:>8} {:>8}\n", info.gpus[0].name, "size", "memcpy GB/s",
             "plan GB/s", "strided GB/s", "ratio", "strided");
  bool ok = true;
  for (std::int64_t mib = 1; mib <= max_mib; mib *= 4) {
    const std::int64_t bytes = mib << 20;
    auto backend = runtime::make_cuda_backend();
    const auto flat =
        runtime::run_plan(chain(bytes, false), *backend, {.warmup = 1, .iterations = 5, .verify = false});
    const auto str =
        runtime::run_plan(chain(bytes, true), *backend, {.warmup = 1, .iterations = 5, .verify = false});
    const double moved = static_cast<double>(bytes) * kHops;
    const double ref = moved / memcpy_loop_seconds(bytes) / 1e9;
    const double plan = moved / flat.timeline.makespan.seconds() / 1e9;
    const double strided = moved / str.timeline.makespan.seconds() / 1e9;
    fmt::print("{:>7} MiB {:>14.1f} {:>14.1f} {:>14.1f} {:>8.3f} {:>8.3f}\n", mib, ref, plan, strided,
               plan / ref, strided / ref);
    ok = ok && plan / ref >= 0.85;
  }
  fmt::print("{}\n",
             ok ? "target met: every contiguous ratio >= 0.85" : "TARGET MISSED: a ratio is under 0.85");
  return ok ? 0 : 1;
}
