#pragma once
// Shared by the GPU test programs: skip (exit 77, which ctest reports as
// "skipped") without enough GPUs, and count checks.

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "plan/plan.h"
#include "runtime/gpu_info.h"

namespace meshsim::gputest {

inline void require_gpus(int n) {
  const auto info = runtime::query_runtime();
  if (!info.cuda_built || static_cast<int>(info.gpus.size()) < n) {
    fmt::print("skipped: needs {} GPU{}; {}\n", n, n == 1 ? "" : "s",
               info.status.empty() ? fmt::format("this machine has {}", info.gpus.size()) : info.status);
    std::exit(77);
  }
}

/// The source tree: $MESHSIM_SOURCE_DIR when set (the build was carried to
/// another machine, where the tree lies elsewhere), else where it was built.
inline std::string source_dir() {
  const char* env = std::getenv("MESHSIM_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(MESHSIM_SOURCE_DIR);
}

struct Checks {
  int passed = 0;
  int failed = 0;
  void check(bool ok, const std::string& what) {
    fmt::print("{} {}\n", ok ? "ok  " : "FAIL", what);
    ++(ok ? passed : failed);
  }
  [[nodiscard]] int finish() const {
    fmt::print("{} passed, {} failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
  }
};

inline  // T is 8x12x10x6 f32 on one device. Regions to three others:
        //   a sub-box [2,6)x[3,9)x[1,7)x[0,6) into a buffer holding [0,8)x[3,9)x[0,10)x[0,6)
        //     (rows of 6 elements; strides nest: the 3-D copy path),
        //   [1,3)x[2,4)x[5,8)x[1,4) into a plain buffer (three outer dimensions: 2-D copies in a loop),
        //   all of T into a plain buffer (one run).
    plan::Plan
    boxes_plan() {
  plan::Plan p;
  p.name = "boxes";
  p.tensors.push_back({"T", {8, 12, 10, 6}, plan::DType::f32});
  auto vol = [](const std::vector<std::pair<std::int64_t, std::int64_t>>& b) {
    std::int64_t n = 4;
    for (const auto& [lo, hi] : b) n *= hi - lo;
    return Bytes(n);
  };
  const std::vector<std::pair<std::int64_t, std::int64_t>> all{{0, 8}, {0, 12}, {0, 10}, {0, 6}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> slab{{0, 8}, {3, 9}, {0, 10}, {0, 6}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> sub{{2, 6}, {3, 9}, {1, 7}, {0, 6}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> odd{{1, 3}, {2, 4}, {5, 8}, {1, 4}};
  // Devices h0/gpu0..3 are 0..3; buffers src, slab, odd, whole are 0..3.
  p.devices = {"h0/gpu0", "h0/gpu1", "h0/gpu2", "h0/gpu3"};
  p.buffers.push_back({"src", 0, vol(all), 0, all});
  p.buffers.push_back({"slab", 1, vol(slab), 0, slab});
  p.buffers.push_back({"odd", 2, vol(odd), std::nullopt, {}});
  p.buffers.push_back({"whole", 3, vol(all), std::nullopt, {}});
  auto send = [&](const char* id, std::size_t dst, const auto& box) {  // dst: device and buffer
    plan::Task t;
    t.id = id;
    t.kind = plan::TaskKind::send;
    t.devices = {0, dst};
    t.size = vol(box);
    t.payload.push_back({0, box, 0, Bytes(0), dst, Bytes(0)});
    p.tasks.push_back(t);
  };
  send("sub", 1, sub);
  send("odd", 2, odd);
  send("whole", 3, all);
  // The slab buffer's box is only partly written: give the rest its own region.
  plan::Task rest;
  rest.id = "slab-rest";
  rest.kind = plan::TaskKind::send;
  rest.devices = {0, 1};
  for (const auto& box :
       std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>{{{0, 2}, {3, 9}, {0, 10}, {0, 6}},
                                                                       {{6, 8}, {3, 9}, {0, 10}, {0, 6}},
                                                                       {{2, 6}, {3, 9}, {0, 1}, {0, 6}},
                                                                       {{2, 6}, {3, 9}, {7, 10}, {0, 6}}}) {
    rest.payload.push_back({0, box, 0, Bytes(0), 1, Bytes(0)});
    rest.size += vol(box);
  }
  p.tasks.push_back(rest);
  return p;
}

// An n-rank collective over a 6 x 10 tensor G of `parts` = n parts: rank k
// holds part k in "p<k>". all_reduce: every rank's "s<k>" gets the whole
// sum; reduce_scatter: rank k's "s<k>" gets rows [2k, 2k + 2) of it.
inline plan::Plan sum_plan(plan::DType dtype, int n, plan::CollectiveOp op) {
  plan::Plan p;
  p.name = "sum";
  p.tensors.push_back({"G", {2 * n, 10}, dtype, n});
  using Box = std::vector<std::pair<std::int64_t, std::int64_t>>;
  const Box whole{{0, 2 * n}, {0, 10}};
  const Bytes size = Bytes(2 * n * 10 * plan::dtype_size(dtype));
  plan::Task t;
  t.id = "reduce";
  t.kind = plan::TaskKind::collective;
  t.op = op;
  t.dtype = dtype;
  t.size = size;
  // Buffers p0, s0, p1, s1, ...: member k's part at 2k, its sum at 2k + 1.
  const auto part = [](int k) { return 2 * static_cast<std::size_t>(k); };
  for (int k = 0; k < n; ++k) {
    const std::size_t dev = plan::device_index(p, fmt::format("h0/gpu{}", k));
    t.devices.push_back(dev);
    p.buffers.push_back({fmt::format("p{}", k), dev, size, 0, whole, k});
    const Box out = op == plan::CollectiveOp::all_reduce ? whole : Box{{2 * k, 2 * k + 2}, {0, 10}};
    p.buffers.push_back({fmt::format("s{}", k), dev, size, 0, out});
    for (int j = 0; j < n; ++j) t.payload.push_back({0, out, part(j), Bytes(0), part(k) + 1, Bytes(0), true});
  }
  p.tasks.push_back(t);
  return p;
}

}  // namespace meshsim::gputest
