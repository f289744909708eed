// On a machine with 2+ GPUs: the nccl backend runs plans with one plan
// device per GPU (point-to-point with strided regions, a broadcast group,
// payload-less collectives) and every byte verifies. Otherwise: exit 77.

#include "runtime/nccl_backend.h"

#include <fmt/format.h>

#include "runtime/executor.h"
#include "runtime/gpu_info.h"
#include "tests/gpu/gpu_test_util.h"

using namespace meshsim;

int main() {
  gputest::require_gpus(2);
  const int gpus = static_cast<int>(runtime::query_runtime().gpus.size());
  gputest::Checks c;
  // T (64 x 40 f32) on gpu0; rows 0-31 to gpu1 (contiguous), columns 8-23 to
  // gpu1 (strided: packed and unpacked), and with 3+ GPUs the whole tensor
  // broadcast from gpu0 to every other GPU; then an all-reduce and an
  // all-gather of 64 MiB over every GPU.
  plan::Plan p;
  p.name = "nccl-smoke";
  p.tensors.push_back({"T", {64, 40}, plan::DType::f32});
  const std::vector<std::pair<std::int64_t, std::int64_t>> all{{0, 64}, {0, 40}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> rows{{0, 32}, {0, 40}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> cols{{0, 64}, {8, 24}};
  // Device g is h0/gpu<g>; buffers src, rows, cols are 0, 1, 2.
  std::vector<std::size_t> group;
  for (int g = 0; g < gpus; ++g) group.push_back(plan::device_index(p, fmt::format("h0/gpu{}", g)));
  p.buffers.push_back({"src", 0, Bytes(64 * 40 * 4), 0, all});
  p.buffers.push_back({"rows", 1, Bytes(32 * 40 * 4), 0, rows});
  p.buffers.push_back({"cols", 1, Bytes(64 * 16 * 4), 0, cols});
  plan::Task s;
  s.id = "p2p";
  s.kind = plan::TaskKind::send;
  s.devices = {0, 1};
  s.payload = {{0, rows, 0, Bytes(0), 1, Bytes(0)}};
  s.size = Bytes(32 * 40 * 4);
  p.tasks.push_back(s);
  s.id = "p2p-strided";
  s.payload = {{0, cols, 0, Bytes(0), 2, Bytes(0)}};
  s.size = Bytes(64 * 16 * 4);
  p.tasks.push_back(s);
  if (gpus >= 3) {
    plan::Task b;
    b.id = "bcast";
    b.kind = plan::TaskKind::broadcast;
    b.devices = group;
    b.size = Bytes(64 * 40 * 4);
    for (int g = 1; g < gpus; ++g) {
      b.payload.push_back({0, all, 0, Bytes(0), p.buffers.size(), Bytes(0)});
      p.buffers.push_back(
          {fmt::format("copy{}", g), group[static_cast<std::size_t>(g)], Bytes(64 * 40 * 4), 0, all});
    }
    p.tasks.push_back(b);
  }
  for (auto op : {plan::CollectiveOp::all_reduce, plan::CollectiveOp::all_gather}) {
    plan::Task t;
    t.id = std::string(plan::to_string(op));
    t.kind = plan::TaskKind::collective;
    t.op = op;
    t.devices = group;
    t.size = Bytes::MiB(64);
    p.tasks.push_back(t);
  }
  auto backend = runtime::make_nccl_backend({.timeout = Time::s(60), .compute_time = {}});
  const auto r = runtime::run_plan(p, *backend, {.warmup = 1, .iterations = 3, .verify = true});
  c.check(r.check.ok, fmt::format("{} elements verified, {} bad ({})", r.check.elements_checked,
                                  r.check.bad_elements, r.backend_description));
  if (!r.check.mismatches.empty()) fmt::print("  {}\n", r.check.mismatches[0].describe());
  for (std::size_t i = 0; i < p.tasks.size(); ++i)
    fmt::print("     {}: {} us\n", p.tasks[i].id,
               (r.timeline.tasks[i].end - r.timeline.tasks[i].start).microseconds());
  // Sum payloads, nccl-tests' -c: an all-reduce over every GPU, one
  // ncclAllReduce per dtype; each rank's 2n x 10 sum is checked.
  for (const auto d : {plan::DType::f32, plan::DType::f16, plan::DType::bf16, plan::DType::i32}) {
    const auto sum = gputest::sum_plan(d, gpus, plan::CollectiveOp::all_reduce);
    const auto rs = runtime::run_plan(sum, *backend, {.warmup = 1, .iterations = 2, .verify = true});
    c.check(rs.check.ok && rs.check.elements_checked == std::int64_t{gpus} * 2 * gpus * 10,
            fmt::format("all_reduce sum in {}: {} elements verified, {} bad", plan::to_string(d),
                        rs.check.elements_checked, rs.check.bad_elements));
  }
  return c.finish();
}
