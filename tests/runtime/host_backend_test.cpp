#include "runtime/host_backend.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "plan/plan_json.h"
#include "runtime/executor.h"
#include "runtime/work.h"
#include "tests/gpu/gpu_test_util.h"

using namespace meshsim;
using namespace meshsim::runtime;

namespace {

std::vector<std::size_t> list_of(std::span<const std::size_t> s) {
  return {s.begin(), s.end()};
}

using Box = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::int64_t elems(const Box& b) {
  std::int64_t n = 1;
  for (const auto& [lo, hi] : b) n *= hi - lo;
  return n;
}

plan::Task send(plan::Plan& p, const std::string& id, const std::string& a, const std::string& b,
                std::vector<plan::Region> regs, std::vector<std::size_t> deps = {}) {
  plan::Task t;
  t.id = id;
  t.kind = plan::TaskKind::send;
  t.devices = {plan::device_index(p, a), plan::device_index(p, b)};
  t.deps = std::move(deps);
  t.payload = std::move(regs);
  for (const auto& r : t.payload) t.size += Bytes(elems(r.box) * 4);
  return t;
}

// A 6x5 f32 tensor T on device a (one buffer holding all of it) moves to:
//   b: rows 0-2 (a contiguous block),
//   c: columns 1-3 of every row (strided on the source side),
//   d: rows 3-5 through a staging buffer without a box on device e
//      (a → e at offset 8, then e → d).
plan::Plan awkward_plan() {
  plan::Plan p;
  p.name = "awkward";
  p.tensors.push_back({"T", {6, 5}, plan::DType::f32});
  auto buf = [&](const std::string& name, const std::string& dev, Box box) {
    p.buffers.push_back({name, plan::device_index(p, dev), Bytes(elems(box) * 4), 0, std::move(box)});
    return p.buffers.size() - 1;
  };
  const std::size_t a = buf("a.T", "h0/gpu0", {{0, 6}, {0, 5}});
  const std::size_t b = buf("b.T", "h0/gpu1", {{0, 3}, {0, 5}});
  const std::size_t c = buf("c.T", "h0/gpu2", {{0, 6}, {1, 4}});
  const std::size_t d = buf("d.T", "h1/gpu0", {{3, 6}, {0, 5}});
  const std::size_t e = p.buffers.size();
  p.buffers.push_back({"e.stage", plan::device_index(p, "h1/gpu1"), Bytes(8 + 15 * 4), std::nullopt, {}});
  p.tasks.push_back(send(p, "a->b", "h0/gpu0", "h0/gpu1", {{0, {{0, 3}, {0, 5}}, a, {}, b, {}}}));
  p.tasks.push_back(send(p, "a->c", "h0/gpu0", "h0/gpu2", {{0, {{0, 6}, {1, 4}}, a, {}, c, {}}}));
  p.tasks.push_back(send(p, "a->e", "h0/gpu0", "h1/gpu1", {{0, {{3, 6}, {0, 5}}, a, {}, e, Bytes(8)}}));
  p.tasks.push_back(send(p, "e->d", "h1/gpu1", "h1/gpu0", {{0, {{3, 6}, {0, 5}}, e, Bytes(8), d, {}}}, {2}));
  return p;
}

}  // namespace

TEST_CASE("host backend moves strided and staged regions and verifies every destination byte",
          "[runtime][host]") {
  // Destinations b (15 elements), c (18), d (15) and the staging buffer
  // (its one region, 15) are checked: 63 elements in 4 buffers, all right.
  const auto plan = awkward_plan();
  auto backend = make_host_backend({.threads = 3, .compute_time = {}});
  const auto rep = run_plan(plan, *backend, {.warmup = 1, .iterations = 3, .verify = true});
  CHECK(rep.check.ok);
  CHECK(rep.check.buffers_checked == 4);
  CHECK(rep.check.elements_checked == 63);
  CHECK(rep.payload_bytes == (15 + 18 + 15 + 15) * 4);
  CHECK(rep.makespans.size() == 3);
  // Dependencies hold in the measured timeline: e->d starts after a->e ends.
  CHECK(rep.timeline.tasks[3].start >= rep.timeline.tasks[2].end);
}

TEST_CASE("a corrupted plan is caught with the task, buffer, index and bytes", "[runtime][host]") {
  // The second hop reads the staging buffer one element (4 B) too far on:
  // d's first element, T[3,0] = global index 15, receives T[3,1]. The report
  // names task e->d, buffer d.T on h1/gpu0, index 15 at [3,0]; the last
  // element reads past the staged region (poison), so all 15 are wrong.
  auto plan = awkward_plan();
  plan.tasks[3].payload[0].src_offset = Bytes(12);
  plan.buffers[4].size = Bytes(12 + 15 * 4);
  const auto v = verify_on_host(plan);
  CHECK_FALSE(v.ok);
  REQUIRE(v.mismatches.size() == 1);
  const Mismatch& m = v.mismatches[0];
  CHECK(m.task == "e->d");
  CHECK(m.buffer == "d.T");
  CHECK(m.device == "h1/gpu0");
  CHECK(m.index == 15);
  CHECK(m.coords == std::vector<std::int64_t>{3, 0});
  CHECK(m.bad_in_buffer == 15);
  CHECK(m.expected != m.actual);
  const std::string text = m.describe();
  CHECK(text.find("task \"e->d\"") != std::string::npos);
  CHECK(text.find("element 15 [3,0]") != std::string::npos);
}

TEST_CASE("an element no region writes is reported as such", "[runtime][host]") {
  // a->b now covers rows 0-1 only: row 2 of b (first index 10) stays poison.
  auto plan = awkward_plan();
  plan.tasks[0].payload[0].box[0] = {0, 2};
  const auto v = verify_on_host(plan);
  CHECK_FALSE(v.ok);
  REQUIRE(v.mismatches.size() == 1);
  CHECK(v.mismatches[0].task.empty());
  CHECK(v.mismatches[0].index == 10);
  CHECK(v.mismatches[0].bad_in_buffer == 5);
  CHECK(v.mismatches[0].actual == "0xa5 a5 a5 a5");
}

TEST_CASE("streams and dependencies order the host run, and compute waits its duration", "[runtime][host]") {
  // Two compute tasks of 20 ms on one device and stream run one after the
  // other (>= 40 ms makespan); a third on stream 1 overlaps them. A send
  // without payload moves 1 MiB between scratch areas after the second.
  plan::Plan p;
  p.name = "streams";
  auto compute = [&](const std::string& id, int stream) {
    plan::Task t;
    t.id = id;
    t.kind = plan::TaskKind::compute;
    t.devices = {plan::device_index(p, "h0/gpu0")};
    t.stream = stream;
    t.duration = Time::ms(20);
    p.tasks.push_back(t);
  };
  compute("c0", 0);
  compute("c1", 0);
  compute("c2", 1);
  plan::Task s;
  s.id = "s";
  s.kind = plan::TaskKind::send;
  s.devices = {plan::device_index(p, "h0/gpu0"), plan::device_index(p, "h0/gpu1")};
  s.size = Bytes::MiB(1);
  s.deps = {1};
  p.tasks.push_back(s);
  const auto sched = plan::make_schedule(p, "<plan>");
  CHECK(list_of(sched.preds[1]) == std::vector<std::size_t>{0});
  CHECK(sched.preds[2].empty());
  CHECK(list_of(sched.preds[3]) == std::vector<std::size_t>{1});
  auto backend = make_host_backend({.threads = 4, .compute_time = {}});
  const auto rep = run_plan(p, *backend);
  CHECK(rep.timeline.tasks[1].start >= rep.timeline.tasks[0].end);
  CHECK(rep.timeline.tasks[3].start >= rep.timeline.tasks[1].end);
  CHECK(rep.timeline.tasks[0].end - rep.timeline.tasks[0].start >= Time::ms(20));
  CHECK(rep.timeline.makespan >= Time::ms(40));
  CHECK(rep.timeline.tasks[2].start < rep.timeline.tasks[1].start);  // stream 1 does not wait for stream 0
  CHECK(rep.scratch_bytes == Bytes::MiB(1).count());
  // The measured critical path ends with the send and runs back through c1 and c0.
  CHECK(rep.timeline.critical_path == std::vector<std::size_t>{0, 1, 3});
}

TEST_CASE("payload-less collectives move their textbook volume between scratch areas", "[runtime][work]") {
  // Ring all-reduce of 3 MiB over 3 devices: each edge carries 2*(3-1)/3*3 MiB
  // = 4 MiB, split into pieces of at most 3 MiB: 3 edges x (3 + 1) MiB.
  plan::Plan p;
  p.name = "ar";
  plan::Task t;
  t.id = "ar";
  t.kind = plan::TaskKind::collective;
  t.op = plan::CollectiveOp::all_reduce;
  p.devices = {"a", "b", "c"};
  t.devices = {0, 1, 2};
  t.size = Bytes::MiB(3);
  p.tasks.push_back(t);
  const auto w = lower(p);
  CHECK(w.scratch_moved == 3 * Bytes::MiB(4).count());
  CHECK(w.tasks[0].scratch.size() == 6);
  CHECK(w.scratch_bytes == std::vector<std::int64_t>(3, Bytes::MiB(3).count()));
}

TEST_CASE("the example plan runs on the host backend", "[runtime][host]") {
  // configs/plans/two-stage-step.json has compute, sends and collectives
  // without payload; every task runs once and after its predecessors.
  const auto plan = plan::load_plan_file(MESHSIM_SOURCE_DIR "/configs/plans/two-stage-step.json");
  auto backend = make_host_backend(
      {.threads = 2, .compute_time = [](const plan::Plan&, const plan::Task&) { return Time::us(50); }});
  const auto rep = run_plan(plan, *backend);
  const auto sched = plan::make_schedule(plan, "<plan>");
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    CHECK(rep.timeline.tasks[i].end >= rep.timeline.tasks[i].start);
    for (std::size_t p : sched.preds[i]) CHECK(rep.timeline.tasks[i].start >= rep.timeline.tasks[p].end);
  }
  CHECK(rep.check.ok);
}

TEST_CASE("run_plan rejects nonsense options", "[runtime]") {
  // Zero timed iterations or negative warm-up runs are usage errors.
  const auto plan = awkward_plan();
  auto backend = make_host_backend();
  CHECK_THROWS_AS(run_plan(plan, *backend, {.warmup = 0, .iterations = 0, .verify = true}), UsageError);
  CHECK_THROWS_AS(run_plan(plan, *backend, {.warmup = -1, .iterations = 1, .verify = true}), UsageError);
}

TEST_CASE("4-D boxes: nested and deeper strided regions move right (the GPU test's plan)",
          "[runtime][host]") {
  // The cuda backend test's plan: a sub-box into a slab (two nested outer
  // dimensions), an odd box into a flat buffer (three outer dimensions), the
  // whole tensor as one run, and the slab's rest. Every element of the slab
  // (8x6x10x6), the odd box (2x2x3x3) and the whole tensor (8x12x10x6) checks.
  const auto plan = gputest::boxes_plan();
  const auto v = verify_on_host(plan);
  CHECK(v.ok);
  CHECK(v.elements_checked == 8 * 6 * 10 * 6 + 2 * 2 * 3 * 3 + 8 * 12 * 10 * 6);
  if (!v.mismatches.empty()) FAIL_CHECK(v.mismatches.front().describe());
}
