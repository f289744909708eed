// Resharding on hosts with a NIC per GPU (scatter, per-NIC balancing) and
// Alpa's send/recv + local all-gather under Alpa's own rule.

#include <set>

#include <catch2/catch.hpp>

#include "reshard/evaluate.h"
#include "reshard/reshard.h"
#include "sim/executor.h"
#include "tests/reshard/reshard_test_util.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::reshard;
using namespace meshsim::reshard::testing;

namespace {

const topology::Topology& dgx_a100_x4() {
  static const topology::Topology t = [] {
    topology::ClusterSpec cs;
    cs.host_preset = "dgx-a100";
    cs.hosts = 4;
    return topology::build_cluster(cs);
  }();
  return t;
}

// 8192 x 8192 fp16 (128 MiB), S0 R on hosts 0-1 -> S0 R on hosts 2-3: each
// destination host needs one 64 MiB half on all 8 GPUs, which 8 GPUs of
// one source host hold.
ReshardProblem dgx_case() {
  return problem(dgx_a100_x4(), {8192, 8192}, "hosts=0-1", "S0 R", "hosts=2-3", "S0 R", plan::DType::f16);
}

const ReshardOutcome& row(const std::vector<ReshardOutcome>& rows, std::string_view name,
                          std::string_view balance) {
  for (const auto& r : rows)
    if (r.method.name() == name && (r.method.name() == "auto" || r.method.balance_name() == balance))
      return r;
  FAIL("no row " << name << " / " << balance);
  return rows.front();
}

}  // namespace

TEST_CASE("DGX: scatter sends each half from 8 GPUs through 8 NICs and meets the bound", "[reshard][nic]") {
  // Bound: 64 MiB into a host over 8 NICs of 200 Gb/s x 0.96 = 192 GB/s:
  // 349.5 us, plus the route latency. One sender per half (broadcast) puts
  // it through one 24 GB/s NIC: 2.8 ms, 8x the bound. Scatter cuts each
  // half in 8 parts of 8 MiB, each from another source GPU and into
  // another destination GPU's NIC: every byte crosses the network once per
  // destination host (128 MiB) and no NIC carries more than 8 MiB.
  const auto& t = dgx_a100_x4();
  const ReshardProblem p = dgx_case();
  const auto tasks = unit_tasks(p);
  const LowerBound lb = lower_bound(t, p, tasks);
  CHECK(lb.time.seconds() == Approx(64.0 * 1024 * 1024 / 192e9).epsilon(0.02));
  const auto rows =
      evaluate_reshard(t, p, tasks, {Strategy::broadcast, Strategy::scatter}, {Balance::none}, true);
  const auto& bc = row(rows, "broadcast", "none");
  const auto& sc = row(rows, "scatter", "none");
  CHECK(bc.result.makespan.seconds() > 7 * lb.time.seconds());
  CHECK(sc.result.makespan.seconds() <= 1.15 * lb.time.seconds());
  CHECK(row(rows, "auto", "").result.makespan.seconds() <= 1.15 * lb.time.seconds());
  CHECK(sc.network_bytes == Approx(128.0 * 1024 * 1024));
  CHECK(sc.busiest_nic_bytes == Approx(8.0 * 1024 * 1024));
  const Jobs jobs = make_jobs(t, p, Strategy::scatter, tasks);
  REQUIRE(jobs.list.size() == 16);
  const Assignment a = assign_senders(t, tasks, jobs, Balance::none);
  for (std::size_t task = 0; task < 2; ++task) {
    std::set<topology::NodeId> senders, entries;
    for (std::size_t j = 0; j < jobs.list.size(); ++j)
      if (jobs.list[j].task == task) {
        senders.insert(a.sender[j]);
        entries.insert(jobs.list[j].receivers.front());
      }
    CHECK(senders.size() == 8);
    CHECK(entries.size() == 8);
  }
}

TEST_CASE("DGX: the balancers count NICs, not hosts", "[reshard][nic]") {
  // Send-recv on the DGX case: 16 sends of 64 MiB per destination host. Per
  // device, each source GPU sends two; rounds of host-disjoint jobs would
  // allow one send per host pair at a time (8x slower). Counting NICs,
  // host-order and search pack 8 sends per round and match device.
  const auto& t = dgx_a100_x4();
  const ReshardProblem p = dgx_case();
  const auto tasks = unit_tasks(p);
  const auto time = [&](Balance b) {
    return sim::simulate(build_plan(t, p, tasks, Strategy::send_recv, b), t).makespan.seconds();
  };
  const double device = time(Balance::device);
  CHECK(time(Balance::host_size) <= 1.01 * device);
  CHECK(time(Balance::host_order) <= 1.01 * device);
  CHECK(time(Balance::search) <= 1.01 * device);
}

TEST_CASE("allgather follows Alpa's rule: no local all-gather unless the host axis splits enough",
          "[reshard][allgather]") {
  // One GPU to R on 2 hosts x 2 GPUs: the destination spec does not split
  // over the host axis (1 piece < 2 hosts), so Alpa sends whole tiles, as
  // send-recv does. S0 R R on 2 hosts (2 pieces >= 2 hosts): each 1 GiB
  // half, replicated on 4 GPUs, is cut in 4 along dimension 0 (gcd(4, 512)
  // = 4); each GPU receives 256 MiB and the 4 gather the half.
  const auto& t = alpa_cluster();
  {
    const auto p = problem(t, {1000}, "hosts=0,gpus=0", "R", "hosts=1-2,gpus=0-1", "R");
    const auto tasks = unit_tasks(p);
    const Jobs ag = make_jobs(t, p, Strategy::allgather, tasks);
    CHECK(ag.gathers.empty());
    REQUIRE(ag.list.size() == 4);
    for (const Job& j : ag.list) CHECK(j.bytes == Bytes(4000));
  }
  const auto p = problem(t, {1024, 1024, 512}, "hosts=0-1", "S0 R R", "hosts=2-3", "S0 R R");
  const auto tasks = unit_tasks(p);
  const Jobs ag = make_jobs(t, p, Strategy::allgather, tasks);
  REQUIRE(ag.list.size() == 8);
  for (const Job& j : ag.list) {
    CHECK(j.bytes == Bytes(256LL << 20));
    CHECK(j.box[0].second - j.box[0].first == 128);
  }
  REQUIRE(ag.gathers.size() == 2);
  for (const Gather& g : ag.gathers) {
    CHECK(g.members.size() == 4);
    CHECK(g.bytes == Bytes(1LL << 30));
  }
  const plan::Plan plan = build_plan(t, p, tasks, Strategy::allgather, Balance::device);
  CHECK(sim::simulate(plan, t).makespan.seconds() <= 1.1 * lower_bound(t, p, tasks).time.seconds());
}

TEST_CASE("allgather cuts a tile dimension by dimension by gcd, and gathers only what differs",
          "[reshard][allgather]") {
  // R R on one host's 4 GPUs (1 piece >= 1 host: the rule holds).
  // 6 x 4: gcd(4, 6) = 2 on dimension 0, then gcd(2, 4) = 2 on dimension 1:
  // four 3 x 2 parts, receiver m holding part (m / 2, m % 2); one gather.
  // 6 x 5: gcd(4, 6) = 2, gcd(2, 5) = 1: two 3 x 5 parts, each held by two
  // receivers (m / 2); two gathers, {0, 2} and {1, 3}.
  const auto& t = alpa_cluster();
  const auto p = problem(t, {6, 4}, "hosts=0,gpus=0", "R R", "hosts=1", "R R");
  const Jobs a = make_jobs(t, p, Strategy::allgather, unit_tasks(p));
  REQUIRE(a.list.size() == 4);
  REQUIRE(a.gathers.size() == 1);
  const std::vector<Box> parts{{{0, 3}, {0, 2}}, {{0, 3}, {2, 4}}, {{3, 6}, {0, 2}}, {{3, 6}, {2, 4}}};
  for (std::size_t m = 0; m < 4; ++m) {
    CHECK(a.list[m].receivers.front() == p.dst.devices[m]);
    CHECK(a.list[m].box == parts[m]);
    CHECK(a.gathers[0].parts[m] == parts[m]);
  }
  const auto q = problem(t, {6, 5}, "hosts=0,gpus=0", "R R", "hosts=1", "R R");
  const Jobs b = make_jobs(t, q, Strategy::allgather, unit_tasks(q));
  REQUIRE(b.gathers.size() == 2);
  for (std::size_t g = 0; g < 2; ++g) {
    CHECK(b.gathers[g].members == std::vector{q.dst.devices[g], q.dst.devices[g + 2]});
    CHECK(b.gathers[g].parts == std::vector<Box>{{{0, 3}, {0, 5}}, {{3, 6}, {0, 5}}});
  }
}
