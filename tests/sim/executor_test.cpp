#include "sim/executor.h"

#include <cmath>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "plan/plan_json.h"
#include "sim/plan_devices.h"
#include "topology/cluster.h"
#include "topology/topology.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::plan;
using namespace meshsim::topology;

namespace {

// One host, n H100s joined in a ring by single 25 GB/s NVLink lanes
// (efficiency 1, latency 1 us): gpu k <-> gpu k+1, and gpu n-1 <-> gpu 0.
Topology ring_host(int n) {
  Topology t;
  t.name = "ring";
  t.add_host(Host{"h0", ""});
  std::vector<NodeId> g;
  for (int i = 0; i < n; ++i)
    g.push_back(t.add_node(Node{fmt::format("h0/gpu{}", i), NodeKind::gpu, 0, "H100"}));
  for (int i = 0; i < n; ++i)
    t.add_link(Link{LinkKind::nvlink, g[static_cast<std::size_t>(i)],
                    g[static_cast<std::size_t>((i + 1) % n)], Bandwidth::GBps(25), 1, Time::us(1), 1.0, 0,
                    0});
  return t;
}

// Devices h0/gpu0 .. h0/gpu(n-1) of `p`.
std::vector<std::size_t> gpus(Plan& p, int n) {
  std::vector<std::size_t> out;
  for (int i = 0; i < n; ++i) {
    const std::string name = fmt::format("h0/gpu{}", i);
    out.push_back(device_index(p, name));
  }
  return out;
}

// Device names of `p` as its indices.
std::vector<std::size_t> on(Plan& p, std::initializer_list<const char*> names) {
  std::vector<std::size_t> out;
  for (const char* n : names) out.push_back(device_index(p, n));
  return out;
}

// A ring collective with NCCL's Simple protocol, forced (no selection).
Task collective(Plan& p, CollectiveOp op, int n, Bytes size) {
  Task t;
  t.id = std::string(1, 'c');  // (GCC 12 misreads `= "c"` here as an overlapping copy)
  t.kind = TaskKind::collective;
  t.op = op;
  t.algorithm = Algorithm::ring;
  t.protocol = Protocol::simple;
  t.devices = gpus(p, n);
  t.size = size;
  return t;
}

Task compute(Plan& p, const std::string& id, const std::string& dev, Time d, int stream = 0) {
  Task t;
  t.id = id;
  t.kind = TaskKind::compute;
  t.devices = {device_index(p, dev)};
  t.duration = d;
  t.stream = stream;
  return t;
}

// h0/gpu0 computes for 700 us, then `all_reduces` all-reduces of 96 MiB
// over 4 GPUs run one after another; beside them a broadcast on stream 1
// from h0/gpu2 through h0/gpu3 to h0/gpu0.
Plan mixed_plan(std::size_t all_reduces) {
  Plan p;
  p.name = "mix";
  p.tasks.push_back(compute(p, "a", "h0/gpu0", Time::us(700)));
  for (std::size_t k = 1; k <= all_reduces; ++k) {
    Task ar = collective(p, CollectiveOp::all_reduce, 4, Bytes::MiB(96));
    ar.id = fmt::format("ar{}", k);
    ar.deps = {k - 1};
    p.tasks.push_back(ar);
  }
  Task b;
  b.id = "b";
  b.kind = TaskKind::broadcast;
  b.devices = on(p, {"h0/gpu2", "h0/gpu3", "h0/gpu0"});
  b.size = Bytes::MiB(5) + Bytes(3);
  b.stream = 1;
  p.tasks.push_back(b);
  return p;
}

void check_close(Time got, double expected_seconds) {
  INFO("got " << got.count_ps() << " ps, expected " << expected_seconds * 1e12);
  CHECK(std::fabs(static_cast<double>(got.count_ps()) - expected_seconds * 1e12) <= 8.0);
}

constexpr double kB = 25e9;  // bytes/s of one ring edge

}  // namespace

TEST_CASE("ring all-reduce: 2(n-1)/n S/B + base + 2(n-1) step latencies", "[executor]") {
  // n = 4, S = 1 GB: 1.5 GB over each edge at 25 GB/s = 60 ms. Latency, NCCL's
  // ring/Simple: base 8.4 us + 6 steps x max(1 us route, 3.4 us NVLink hop).
  const Topology t = ring_host(4);
  Plan p;
  p.tasks.push_back(collective(p, CollectiveOp::all_reduce, 4, Bytes(1'000'000'000)));
  const SimResult r = simulate(p, t);
  check_close(r.makespan, 1.5e9 / kB + 8.4e-6 + 6 * 3.4e-6);
  // Every forward ring edge carried 1.5 GB; the reverse directions nothing.
  for (LinkId l = 0; l < 4; ++l) {
    CHECK(r.link_bytes[Topology::directed(l, false)] == Approx(1.5e9));
    CHECK(r.link_bytes[Topology::directed(l, true)] == 0.0);
  }
}

TEST_CASE("ring all-gather and reduce-scatter: (n-1)/n S/B + base + (n-1) step latencies", "[executor]") {
  // n = 5 (awkward size), S = 1 GB: 0.8 GB per edge = 32 ms, + 8.4 us + 4 x 3.4 us.
  const Topology t = ring_host(5);
  for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
    Plan p;
    p.tasks.push_back(collective(p, op, 5, Bytes(1'000'000'000)));
    check_close(simulate(p, t).makespan, 0.8e9 / kB + 8.4e-6 + 4 * 3.4e-6);
  }
}

// One broadcast along gpu0 -> gpu1 -> ... -> gpu(n-1).
static Plan chain_broadcast(int n, Bytes size) {
  Plan p;
  Task b;
  b.id = "b";
  b.kind = TaskKind::broadcast;
  b.devices = gpus(p, n);
  b.size = size;
  p.tasks.push_back(b);
  return p;
}

TEST_CASE("broadcast chain: S/B + (hops-1) chunk/B + hops latencies", "[executor]") {
  // Chain gpu0 -> gpu1 -> gpu2 -> gpu3 (3 hops), S = 64 MiB, chunk 512 KiB
  // (128 chunks): 67,108,864/25e9 + 2 x 524,288/25e9 + 3 us.
  const Topology t = ring_host(4);
  Plan p = chain_broadcast(4, Bytes::MiB(64));
  const SimResult r = simulate(p, t);
  check_close(r.makespan, (67'108'864.0 + 2 * 524'288.0) / kB + 3e-6);
  // Each hop carried the whole buffer once.
  for (LinkId l = 0; l < 3; ++l) CHECK(r.link_bytes[Topology::directed(l, false)] == Approx(67'108'864.0));
}

TEST_CASE("fluid broadcast: the chunked chain's time on a uniform chain, as one flow", "[executor]") {
  // The same 3-hop chain as above: S/B + 2 c/B + 3 us, exactly.
  const Topology t = ring_host(4);
  Plan p = chain_broadcast(4, Bytes::MiB(64));
  SimOptions fluid;
  fluid.fluid_broadcast = true;
  const SimResult chunked = simulate(p, t);
  const SimResult r = simulate(p, t, fluid);
  check_close(r.makespan, (67'108'864.0 + 2 * 524'288.0) / kB + 3e-6);
  CHECK(r.events < chunked.events / 50);
  for (LinkId l = 0; l < 3; ++l) CHECK(r.link_bytes[Topology::directed(l, false)] == Approx(67'108'864.0));
  // Smaller than a chunk: stored and forwarded whole at each hop, 3 S/B + 3 us, as chunked.
  p.tasks[0].size = Bytes(100'000);
  check_close(simulate(p, t, fluid).makespan, 3 * 100'000.0 / kB + 3e-6);
  check_close(simulate(p, t).makespan, 3 * 100'000.0 / kB + 3e-6);
}

TEST_CASE("all-to-all is direct: S/n to every other rank", "[executor]") {
  // 3 GPUs in a ring are all neighbours. Each ordered pair moves S/3 = 100 MB;
  // each directed edge carries exactly one such flow: 4 ms + 1 us.
  const Topology t = ring_host(3);
  Plan p;
  Task a2a = collective(p, CollectiveOp::all_to_all, 3, Bytes(300'000'000));
  a2a.algorithm.reset();  // selected: all_to_all runs only direct
  a2a.protocol.reset();
  p.tasks.push_back(a2a);
  const SimResult r = simulate(p, t);
  check_close(r.makespan, 1e8 / kB + 1e-6);
  CHECK(r.collectives[0].algorithm == Algorithm::direct);
}

TEST_CASE("streams serialise, different streams overlap, deps order", "[executor]") {
  const Topology t = ring_host(2);
  Plan p;
  p.tasks.push_back(compute(p, "a", "h0/gpu0", Time::ms(2)));
  p.tasks.push_back(compute(p, "b", "h0/gpu0", Time::ms(3)));     // same stream: after a
  p.tasks.push_back(compute(p, "c", "h0/gpu0", Time::ms(1), 1));  // stream 1: alongside a
  Task s;
  s.id = "s";
  s.kind = TaskKind::send;
  s.devices = on(p, {"h0/gpu0", "h0/gpu1"});
  s.size = Bytes(25'000'000);  // 1 ms at 25 GB/s, + 1 us
  s.stream = 2;
  s.deps = {2};
  p.tasks.push_back(s);
  Task d = compute(p, "d", "h0/gpu1", Time::ms(1));
  d.deps = {3};
  p.tasks.push_back(d);
  const SimResult r = simulate(p, t);
  CHECK(r.tasks[0].start == Time::zero());
  CHECK(r.tasks[1].start == Time::ms(2));
  CHECK(r.tasks[2].start == Time::zero());
  CHECK(r.tasks[3].start == Time::ms(1));
  check_close(r.tasks[3].end, 2e-3 + 1e-6);
  check_close(r.tasks[4].end, 3e-3 + 1e-6);
  // a (2 ms) then b (3 ms) ends last at 5 ms: the critical path is a, b.
  CHECK(r.makespan == Time::ms(5));
  CHECK(r.critical_path == std::vector<std::size_t>{0, 1});
  CHECK(r.compute_busy[t.at("h0/gpu0")] == Time::ms(6));
}

TEST_CASE("compute without a duration uses the roofline", "[executor]") {
  // H100 bf16 peak 989 TFLOP/s: 989e12 flops = 1 s, + 4 us launch overhead.
  // Memory-bound: 3.35 TB at 3.35 TB/s = 1 s too; the max is taken, not the sum.
  const Topology t = ring_host(2);
  Plan p;
  Task k;
  k.id = "k";
  k.kind = TaskKind::compute;
  k.devices = on(p, {"h0/gpu0"});
  k.flops = 989e12;
  k.mem_bytes = Bytes(3'350'000'000'000);
  k.dtype = DType::bf16;
  p.tasks.push_back(k);
  check_close(simulate(p, t).makespan, 1.0 + 4e-6);
}

TEST_CASE("compute with a kernel set is timed kernel by kernel, each with its launch", "[executor]") {
  // On an H100 (bf16): a GEMM 4096 x 4096 x 4096 in tiles and waves
  // (gemm_time) and a 1 GB memory-bound kernel (kernel_time, 0.3 ms at
  // 3.35 TB/s), one after the other: their two times, two launches
  // included. As one roofline kernel of the same flops and bytes the task
  // would take max(0.139, 0.3) ms + one launch: less.
  const Topology t = ring_host(2);
  Plan p;
  plan::KernelSet set;
  set.name = "layer";
  set.kernels.dtype = DType::bf16;
  set.kernels.gemms = {{4096, 4096, 4096, 1}};
  set.kernels.memory_bytes = {Bytes(1'000'000'000)};
  p.kernel_sets.push_back(set);
  Task k;
  k.id = "k";
  k.kind = TaskKind::compute;
  k.devices = on(p, {"h0/gpu0"});
  k.kernels = 0;
  k.flops = set.kernels.flops();
  k.mem_bytes = set.kernels.bytes();
  k.dtype = DType::bf16;
  p.tasks.push_back(k);
  const DeviceModel& d = *find_device_model("H100");
  const Time expected =
      d.gemm_time(4096, 4096, 4096, DType::bf16) + d.kernel_time(0, Bytes(1'000'000'000), DType::bf16);
  CHECK(expected == d.kernels_time(set.kernels));
  const SimResult r = simulate(p, t);
  CHECK(r.makespan == expected);
  CHECK(r.makespan > d.kernel_time(k.flops, k.mem_bytes, DType::bf16));
  check_close(d.kernel_time(0, Bytes(1'000'000'000), DType::bf16), 1e9 / 3.35e12 + 4e-6);
}

TEST_CASE("a compute task on several devices runs in lockstep: all free to start, the slowest's time",
          "[executor]") {
  // gpu0 (H100) and gpu1 (V100). gpu0 is busy for 2 ms on stream 0; the
  // two-device task waits for it. 125e12 bf16 FLOPs take the V100 1 s
  // (125 TFLOP/s) and the H100 0.126 s: the task takes 1 s + 4 us launch.
  Topology t;
  t.name = "mixed";
  t.add_host(Host{"h0", ""});
  const NodeId a = t.add_node(Node{"h0/gpu0", NodeKind::gpu, 0, "H100"});
  const NodeId b = t.add_node(Node{"h0/gpu1", NodeKind::gpu, 0, "V100"});
  t.add_link(Link{LinkKind::nvlink, a, b, Bandwidth::GBps(25), 1, Time::us(1), 1.0, 0, 0});
  Plan p;
  p.tasks.push_back(compute(p, "first", "h0/gpu0", Time::ms(2)));
  Task k;
  k.id = "both";
  k.kind = TaskKind::compute;
  k.devices = on(p, {"h0/gpu0", "h0/gpu1"});
  k.flops = 125e12;
  k.dtype = DType::bf16;
  p.tasks.push_back(k);
  const SimResult r = simulate(p, t);
  CHECK(r.tasks[1].start == Time::ms(2));
  check_close(r.tasks[1].end - r.tasks[1].start, 1.0 + 4e-6);
  // Both devices count the task as compute.
  CHECK(r.compute_busy[b] == r.tasks[1].end - r.tasks[1].start);
  CHECK(r.compute_busy[a] == Time::ms(2) + (r.tasks[1].end - r.tasks[1].start));
}

TEST_CASE("a send from a device to itself is a local copy under the memory roofline", "[executor]") {
  // H100: 3.35 TB/s. Copying 1.675 TB reads and writes it: 3.35 TB, 1 s,
  // + 4 us launch overhead; no link carries a byte.
  const Topology t = ring_host(2);
  Plan p;
  Task k;
  k.id = "copy";
  k.kind = TaskKind::send;
  k.devices = on(p, {"h0/gpu0", "h0/gpu0"});
  k.size = Bytes(1'675'000'000'000);
  p.tasks.push_back(k);
  const SimResult r = simulate(p, t);
  check_close(r.makespan, 1.0 + 4e-6);
  for (double b : r.link_bytes) CHECK(b == 0);
}

TEST_CASE("a plan round-tripped through JSON simulates to the same result", "[executor]") {
  const Topology t = ring_host(4);
  const Plan p = mixed_plan(1);
  const Plan back = plan_from_json(parse_json_text(dump_json(plan_to_json(p)), "x"), "x");
  const SimResult r1 = simulate(p, t);
  const SimResult r2 = simulate(back, t);
  REQUIRE(r1.tasks.size() == r2.tasks.size());
  for (std::size_t i = 0; i < r1.tasks.size(); ++i) {
    CHECK(r1.tasks[i].start == r2.tasks[i].start);
    CHECK(r1.tasks[i].end == r2.tasks[i].end);
  }
  CHECK(r1.link_bytes == r2.link_bytes);
}

TEST_CASE("runs sharing a cache time every task as runs on their own, and it empties for another topology",
          "[executor]") {
  // Two all-reduces of one size over the same 4 GPUs are one shape; a
  // second run of the plan finds it. A run over another topology object
  // (3 GPUs) starts from an empty cache, and a run after one that kept a
  // direct collective's shape (an all-to-all) does too.
  const Topology four = ring_host(4);
  const Topology three = ring_host(3);
  const Plan p = mixed_plan(2);
  Plan q;
  q.name = "three";
  q.tasks.push_back(collective(q, CollectiveOp::all_reduce, 3, Bytes::MiB(30)));
  Plan direct;
  direct.name = "direct";
  Task a2a = collective(direct, CollectiveOp::all_to_all, 3, Bytes(300'000'000));
  a2a.algorithm.reset();
  a2a.protocol.reset();
  direct.tasks.push_back(a2a);

  auto same = [](const SimResult& x, const SimResult& y) {
    REQUIRE(x.tasks.size() == y.tasks.size());
    for (std::size_t i = 0; i < x.tasks.size(); ++i) {
      CHECK(x.tasks[i].start == y.tasks[i].start);
      CHECK(x.tasks[i].end == y.tasks[i].end);
    }
    CHECK(x.link_bytes == y.link_bytes);
  };
  SimOptions alone;
  alone.fluid_broadcast = true;
  RunCache cache;
  SimOptions shared = alone;
  shared.cache = &cache;
  const SimResult by_itself = simulate(p, four, alone);
  same(simulate(p, four, shared), by_itself);
  CHECK(cache.shapes() == 1);
  same(simulate(p, four, shared), by_itself);
  CHECK(cache.shapes() == 1);
  same(simulate(q, three, shared), simulate(q, three, alone));
  CHECK(cache.shapes() == 1);  // q's alone: the ring of 4's went with its topology
  same(simulate(direct, three, shared), simulate(direct, three, alone));
  CHECK(cache.shapes() == 2);  // q's and the all-to-all's
  same(simulate(q, three, shared), simulate(q, three, alone));
  CHECK(cache.shapes() == 1);  // emptied before: q's alone
}

TEST_CASE("simulating on a topology without the plan's devices fails clearly", "[executor]") {
  const Topology t = ring_host(2);
  Plan p;
  p.tasks.push_back(compute(p, "a", "h3/gpu0", Time::ms(1)));
  CHECK_THROWS_WITH(simulate(p, t),
                    Catch::Matchers::Contains("tasks[0].device: no device named \"h3/gpu0\""));
}

TEST_CASE("plan devices are checked against the topology", "[plan]") {
  topology::ClusterSpec s;
  s.host_preset = "p3.8xlarge";
  s.hosts = 2;
  const topology::Topology t = topology::build_cluster(s);
  auto plan_with = [](const std::string& receiver, const std::string& device) {
    return plan_from_json(parse_json_text(fmt::format(R"({{"format": "meshsim.plan/1", "tasks": [
      {{"id": "bc", "kind": "broadcast", "root": "h0/gpu0", "receivers": ["h0/gpu1", "{}"], "size": "1MiB"}},
      {{"id": "tail", "kind": "compute", "device": "{}", "duration": "1ms"}}]}})",
                                                      receiver, device),
                                          "p.json"),
                          "p.json");
  };
  CHECK(plan_nodes(plan_with("h1/gpu1", "h1/gpu0"), t, "p.json").size() == 4);
  try {
    (void)plan_nodes(plan_with("h7/gpu1", "h1/gpu0"), t, "p.json");
    FAIL("accepted an unknown device");
  } catch (const ConfigError& e) {
    CHECK(e.json_path() == "tasks[0].receivers[1]");
    CHECK_THAT(e.message(), Catch::Matchers::Contains("no device named \"h7/gpu1\""));
  }
  try {
    (void)plan_nodes(plan_with("h1/gpu1", "h1/nic0"), t, "p.json");
    FAIL("accepted a NIC as a compute device");
  } catch (const ConfigError& e) {
    CHECK(e.json_path() == "tasks[1].device");
    CHECK_THAT(e.message(), Catch::Matchers::Contains("is a nic, not a GPU"));
  }
}

TEST_CASE("with check_rates, every solve of a busy run is verified max-min fair", "[executor][maxmin]") {
  // Two DGX H100 hosts: an all-reduce over all 16 GPUs (lockstep flows with
  // weights), two sends that contend for NICs and a broadcast chunk by
  // chunk, overlapping. Every rate computation is checked against the
  // optimality conditions; a violation would throw InternalError.
  topology::ClusterSpec s;
  s.host_preset = "dgx-h100";
  s.hosts = 2;
  const topology::Topology t = topology::build_cluster(s);
  Plan p;
  Task ar;
  ar.id = "ar";
  ar.kind = TaskKind::collective;
  ar.op = CollectiveOp::all_reduce;
  for (int h = 0; h < 2; ++h)
    for (int g = 0; g < 8; ++g) ar.devices.push_back(device_index(p, fmt::format("h{}/gpu{}", h, g)));
  ar.size = Bytes::MiB(256);
  p.tasks.push_back(ar);
  for (int k = 0; k < 2; ++k) {
    Task x;
    x.id = fmt::format("x{}", k);
    x.kind = TaskKind::send;
    x.devices = on(p, {k == 0 ? "h0/gpu1" : "h0/gpu2", "h1/gpu5"});
    x.size = Bytes::MiB(64 + 32 * k);
    x.stream = 1;
    p.tasks.push_back(x);
  }
  Task b;
  b.id = "b";
  b.kind = TaskKind::broadcast;
  b.devices = on(p, {"h1/gpu0", "h0/gpu3", "h0/gpu4"});
  b.size = Bytes::MiB(16);
  b.stream = 2;
  p.tasks.push_back(b);
  SimOptions o;
  o.check_rates = true;
  const SimResult checked = simulate(p, t, o);
  CHECK(checked.makespan == simulate(p, t).makespan);  // checking changes nothing
}
