#include "sim/period_skip.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "plan/plan_json.h"
#include "sim/executor.h"
#include "sim/plan_devices.h"
#include "topology/topology.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::plan;
using namespace meshsim::topology;

namespace {

// Two H100s joined both ways by one 25 GB/s NVLink lane (latency 1 us).
Topology two_gpus() {
  Topology t;
  t.name = "pair";
  t.add_host(Host{"h0", ""});
  const NodeId a = t.add_node(Node{"h0/gpu0", NodeKind::gpu, 0, "H100"});
  const NodeId b = t.add_node(Node{"h0/gpu1", NodeKind::gpu, 0, "H100"});
  t.add_link(Link{LinkKind::nvlink, a, b, Bandwidth::GBps(25), 1, Time::us(1), 1.0, 0, 0});
  return t;
}

Task compute(Plan& p, std::string id, const char* dev, Time d, std::vector<std::size_t> deps = {}) {
  Task t;
  t.id = std::move(id);
  t.kind = TaskKind::compute;
  t.devices = {device_index(p, dev)};
  t.duration = d;
  t.deps = std::move(deps);
  return t;
}

// A two-stage pipeline of n microbatches, each F_j on gpu0 (f_us), a
// 250 KB send to gpu1 on stream 1 (1 us + 10 us at 25 GB/s) and G_j on
// gpu1 (15 us); F of microbatch `odd` takes odd_us instead. Tasks are
// emitted microbatch by microbatch: F_j, S_j, G_j.
Plan two_stages(int n, int odd = -1, std::int64_t odd_us = 0) {
  Plan p;
  for (int j = 0; j < n; ++j) {
    const std::size_t f = p.tasks.size();
    p.tasks.push_back(compute(p, fmt::format("F{}", j), "h0/gpu0", Time::us(j == odd ? odd_us : 20)));
    Task s;
    s.id = fmt::format("S{}", j);
    s.kind = TaskKind::send;
    s.devices = {device_index(p, "h0/gpu0"), device_index(p, "h0/gpu1")};
    s.size = Bytes(250'000);
    s.stream = 1;
    s.deps = {f};
    p.tasks.push_back(s);
    p.tasks.push_back(compute(p, fmt::format("G{}", j), "h0/gpu1", Time::us(15), {f + 1}));
  }
  return p;
}

SimResult run(const Plan& p, bool skip) {
  SimOptions o;
  o.skip_periods = skip;
  return simulate(p, two_gpus(), o);
}

// Everything a run reports, the same with and without skipping.
void check_same(const SimResult& a, const SimResult& b) {
  REQUIRE(a.tasks.size() == b.tasks.size());
  for (std::size_t i = 0; i < a.tasks.size(); ++i) {
    INFO("task " << i);
    CHECK(a.tasks[i].start == b.tasks[i].start);
    CHECK(a.tasks[i].end == b.tasks[i].end);
  }
  CHECK(a.makespan == b.makespan);
  CHECK(a.critical_path == b.critical_path);
  CHECK(a.compute_busy == b.compute_busy);
  CHECK(a.comm_busy == b.comm_busy);
  CHECK(a.events == b.events);
  REQUIRE(a.link_bytes.size() == b.link_bytes.size());
  for (std::size_t l = 0; l < a.link_bytes.size(); ++l) CHECK(a.link_bytes[l] == Approx(b.link_bytes[l]));
}

}  // namespace

TEST_CASE("a two-stage pipeline's steady state is replayed, times exact", "[period_skip]") {
  // F_j ends at 20(j+1) us; S_j then takes 11 us; G_j starts at 20j + 31
  // (G_{j-1} ended at 20j + 26) and ends at 20j + 46: the makespan is
  // 20n + 26 us. Each send leaves the link idle 9 us of every 20.
  const Plan p = two_stages(50);
  const SimResult skipped = run(p, true);
  const SimResult full = run(p, false);
  CHECK(skipped.makespan == Time::us(20 * 50 + 26));
  CHECK(full.replayed_tasks == 0);
  // Microbatch 0 warms up; each period is seen twice before it is replayed.
  CHECK(skipped.replayed_tasks > 100);
  check_same(skipped, full);
  CHECK(skipped.tasks[3 * 40 + 2].end == Time::us(20 * 40 + 46));
}

TEST_CASE("a microbatch that breaks the period is simulated, then the period is found again",
          "[period_skip]") {
  // F_25 takes 35 us: everything after it is 15 us later.
  const Plan p = two_stages(60, 25, 35);
  const SimResult skipped = run(p, true);
  const SimResult full = run(p, false);
  check_same(skipped, full);
  CHECK(skipped.makespan == Time::us(20 * 60 + 26 + 15));
  CHECK(skipped.tasks[3 * 25 + 2].end == Time::us(20 * 25 + 46 + 15));
  CHECK(skipped.replayed_tasks > 100);
}

TEST_CASE("a plan that never repeats replays nothing", "[period_skip]") {
  // Every F takes 1 us longer than the last: no two quiet instants agree.
  Plan p;
  for (int j = 0; j < 30; ++j)
    p.tasks.push_back(compute(p, fmt::format("F{}", j), "h0/gpu0", Time::us(10 + j)));
  const SimResult skipped = run(p, true);
  CHECK(skipped.replayed_tasks == 0);
  check_same(skipped, run(p, false));
  CHECK(skipped.makespan == Time::us(30 * 10 + 29 * 30 / 2));
}
