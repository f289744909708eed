// On a GPU machine: the cuda backend moves the bytes of real plans right on
// virtual devices of GPU 0 — contiguous, 2-D strided, 3-D nested and deeper
// strided regions, staged hops, the planner's resharding plans, sums in
// every dtype — catches a
// corrupted plan, times compute tasks, and runs plans with more calls than
// a stream holds pending. Without a GPU: exit 77 (skipped).

#include "runtime/cuda_backend.h"

#include <fmt/format.h>

#include "plan/plan_json.h"
#include "reshard/reshard.h"
#include "runtime/executor.h"
#include "tests/gpu/gpu_test_util.h"
#include "topology/topology_json.h"

using namespace meshsim;

namespace {

runtime::RunReport run(const plan::Plan& plan, int iterations = 2) {
  auto backend = runtime::make_cuda_backend({.device = 0, .timeout = Time::s(30), .compute_time = {}});
  return runtime::run_plan(plan, *backend, {.warmup = 1, .iterations = iterations, .verify = true});
}

}  // namespace

int main() {
  gputest::require_gpus(1);
  gputest::Checks c;
  const std::string root = gputest::source_dir();

  const auto strided = plan::load_plan_file(root + "/configs/plans/strided-tiles.json");
  const auto r1 = run(strided, 5);
  c.check(r1.check.ok && r1.check.elements_checked == 2580480,
          fmt::format("strided-tiles: {} elements verified ({})", r1.check.elements_checked,
                      r1.backend_description));

  const auto r2 = run(gputest::boxes_plan());
  c.check(r2.check.ok, fmt::format("4-D boxes (1-D, 2-D loop, 3-D copies): {} elements verified, {} bad",
                                   r2.check.elements_checked, r2.check.bad_elements));
  if (!r2.check.mismatches.empty()) fmt::print("  {}\n", r2.check.mismatches[0].describe());

  // Sum payloads, as nccl-tests' -c checks them: 4 virtual ranks all-reduce
  // (every rank's 8 x 10 sum) or reduce-scatter (2 x 10 each) in every dtype.
  for (const auto op : {plan::CollectiveOp::all_reduce, plan::CollectiveOp::reduce_scatter})
    for (const auto d : {plan::DType::f32, plan::DType::f16, plan::DType::bf16, plan::DType::f64,
                         plan::DType::i32, plan::DType::i8, plan::DType::u8}) {
      const auto r = run(gputest::sum_plan(d, 4, op));
      const std::int64_t want = op == plan::CollectiveOp::all_reduce ? 320 : 80;
      c.check(r.check.ok && r.check.elements_checked == want,
              fmt::format("{} sum in {}: {} elements verified, {} bad", plan::to_string(op),
                          plan::to_string(d), r.check.elements_checked, r.check.bad_elements));
    }

  const auto corrupt = plan::load_plan_file(root + "/tests/data/plans/corrupted-offset.json");
  const auto r3 = run(corrupt, 1);
  c.check(!r3.check.ok && !r3.check.mismatches.empty() && r3.check.mismatches[0].task == "unstage" &&
              r3.check.mismatches[0].index == 1310720,
          "corrupted plan: the mismatch names task unstage, element 1310720");

  const auto topo = topology::load_topology_file(root + "/configs/topologies/p3.8xlarge-x5.json");
  for (const auto s :
       {reshard::Strategy::send_recv, reshard::Strategy::allgather, reshard::Strategy::broadcast}) {
    const reshard::ReshardProblem p =
        reshard::make_problem(topo, plan::Tensor{"x", {96, 48, 12}, plan::DType::bf16}, "hosts=0-1",
                              "S0 R S1", "hosts=2-4", "R S01 R");
    const auto plan = reshard::build_plan(topo, p, reshard::unit_tasks(p), s, reshard::Balance::host_order);
    const auto r = run(plan);
    c.check(r.check.ok,
            fmt::format("reshard {} on {} virtual devices: {} elements verified, {} bad",
                        reshard::to_string(s), 20, r.check.elements_checked, r.check.bad_elements));
  }

  // A 2 ms compute task measures 2 ms (the busy kernel), within [1.9, 3] ms.
  plan::Plan busy;
  busy.name = "busy";
  plan::Task t;
  t.id = "spin";
  busy.devices = {"h0/gpu0"};
  t.devices = {0};
  t.duration = Time::ms(2);
  busy.tasks.push_back(t);
  plan::Task g = t;
  g.id = "gemm";
  g.duration.reset();
  g.flops = 2.0 * 4096 * 4096 * 4096;
  g.dtype = plan::DType::bf16;
  g.deps = {0};
  busy.tasks.push_back(g);
  const auto r4 = run(busy, 3);
  const Time spin = r4.timeline.tasks[0].end - r4.timeline.tasks[0].start;
  const Time gemm = r4.timeline.tasks[1].end - r4.timeline.tasks[1].start;
  c.check(spin >= Time::us(1900) && spin <= Time::ms(3),
          fmt::format("busy kernel of 2 ms took {} us", spin.microseconds()));
  fmt::print("     a 4096^3 bf16 GEMM took {} us ({:.0f} TFLOP/s)\n", gemm.microseconds(),
             g.flops / std::max(gemm.seconds(), 1e-12) / 1e12);
  c.check(r4.timeline.tasks[1].start >= r4.timeline.tasks[0].end, "the GEMM waited for its dependency");

  // 3,000 row copies on one stream: far more calls than a stream holds
  // pending, so the gate must open early instead of blocking the host
  // (which would hang); every row still arrives, and the run says so.
  plan::Plan rows;
  rows.name = "rows";
  constexpr std::int64_t kRows = 3000;
  rows.tensors.push_back({"T", {kRows, 256}, plan::DType::f32});
  const std::vector<std::pair<std::int64_t, std::int64_t>> all{{0, kRows}, {0, 256}};
  rows.devices = {"h0/gpu0", "h0/gpu1"};
  rows.buffers.push_back({"a", 0, Bytes(kRows * 256 * 4), 0, all});
  rows.buffers.push_back({"b", 1, Bytes(kRows * 256 * 4), 0, all});
  for (std::int64_t k = 0; k < kRows; ++k) {
    plan::Task row;
    row.id = fmt::format("row{}", k);
    row.kind = plan::TaskKind::send;
    row.devices = {0, 1};
    row.size = Bytes(256 * 4);
    row.payload.push_back({0, {{k, k + 1}, {0, 256}}, 0, Bytes(k * 1024), 1, Bytes(k * 1024)});
    rows.tasks.push_back(row);
  }
  const auto r5 = run(rows, 2);
  const bool noted = !r5.notes.empty() && r5.notes[0].find("opened after") != std::string::npos;
  c.check(r5.check.ok && r5.check.elements_checked == kRows * 256 && noted,
          fmt::format("3,000 copies on one stream: {} elements verified, note: {}", r5.check.elements_checked,
                      r5.notes.empty() ? "none" : r5.notes[0]));

  // Without a warm-up run the one timed run is not gated, and says so.
  auto backend = runtime::make_cuda_backend({.device = 0, .timeout = Time::s(30), .compute_time = {}});
  const auto r6 = runtime::run_plan(strided, *backend, {.warmup = 0, .iterations = 1, .verify = true});
  c.check(r6.check.ok && r6.notes.size() == 1 && r6.notes[0].find("not gated") != std::string::npos,
          "no warm-up: the first run is not gated, and the report says so");
  return c.finish();
}
