#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "sim/executor.h"
#include "sim/ring_order.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::topology;

namespace {

Topology host(const char* preset, int hosts = 1) {
  ClusterSpec s;
  s.host_preset = preset;
  s.hosts = hosts;
  return build_cluster(s);
}

// nccl-tests busbw of a 1 GiB ring all-reduce over every GPU of `t`.
double allreduce_busbw(const Topology& t, Bytes size = Bytes::GiB(1), int channels = 1) {
  Plan p;
  Task task;
  task.channels = channels;
  task.id = "ar";
  task.kind = TaskKind::collective;
  task.op = CollectiveOp::all_reduce;
  task.size = size;
  for (NodeId g : ring_order(t, t.gpus())) task.devices.push_back(t.node(g).name);
  p.tasks.push_back(task);
  const double n = static_cast<double>(t.gpus().size());
  const double algbw = static_cast<double>(size.count()) / simulate(p, t).makespan.seconds();
  return algbw * 2 * (n - 1) / n / 1e9;
}

}  // namespace

TEST_CASE("ring order follows NVLink on the p3.16xlarge cube mesh", "[collective]") {
  // Greedy widest-neighbour walk: 0 3 2 1 5 6 7 4, all NV2 edges (and 4 -> 0 is NV2).
  const Topology t = host("p3.16xlarge");
  std::string order;
  for (NodeId g : ring_order(t, t.gpus())) order += fmt::format("{} ", t.gpu_index(g));
  CHECK(order == "0 3 2 1 5 6 7 4 ");
}

TEST_CASE("ring order crosses each host boundary once", "[collective]") {
  const Topology t = host("dgx-a100", 3);
  const auto ring = ring_order(t, t.gpus());
  int crossings = 0;
  for (std::size_t k = 0; k < ring.size(); ++k)
    crossings += t.node(ring[k]).host != t.node(ring[(k + 1) % ring.size()]).host ? 1 : 0;
  CHECK(crossings == 3);  // h0 -> h1 -> h2 -> back to h0
}

TEST_CASE("1 GiB all-reduce busbw on one host is credible against nccl-tests", "[collective][presets]") {
  // reference/hardware.md §3: 8 x A100 ~230 GB/s; 8 x H100 ring 365-370 GB/s.
  // Our model: 12 x 20 GB/s = 240 and 18 x 20.6 = 370.8 per GPU, minus
  // 14 latencies of 1 us on 1 GiB.
  CHECK(allreduce_busbw(host("dgx-a100")) == Approx(239.6).margin(1.0));
  CHECK(allreduce_busbw(host("p4d.24xlarge")) == Approx(239.6).margin(1.0));
  CHECK(allreduce_busbw(host("dgx-h100")) == Approx(369.8).margin(1.0));
  // V100 cube mesh, one ring of NV2 edges: 2 x 20 GB/s = 40 GB/s.
  CHECK(allreduce_busbw(host("p3.16xlarge")) == Approx(40.0).margin(0.5));
}

TEST_CASE("across hosts the NIC sets the all-reduce busbw", "[collective][presets]") {
  // 2 x p3.8xlarge at 10 Gb/s (x 0.9): the ring crosses the network twice,
  // each crossing one NIC per direction: busbw -> 9 Gb/s = 1.125 GB/s.
  CHECK(allreduce_busbw(host("p3.8xlarge", 2), Bytes::MiB(256)) == Approx(1.125).epsilon(0.01));
}

TEST_CASE("channels put one ring on every NIC across hosts", "[collective][presets]") {
  // 2 x DGX-A100 on rails: one ring is held to one 200 Gb/s NIC pair
  // (x 0.96 = 24 GB/s); 8 channels, rotated so each leaves its host through
  // a different GPU and NIC, reach 8 x 24 = 192 GB/s less latency.
  ClusterSpec s;
  s.host_preset = "dgx-a100";
  s.hosts = 2;
  s.fabric.kind = FabricKind::rail;
  const Topology t = build_cluster(s);
  CHECK(allreduce_busbw(t, Bytes::GiB(1), 1) == Approx(24.0).epsilon(0.02));
  CHECK(allreduce_busbw(t, Bytes::GiB(1), 8) == Approx(192.0).epsilon(0.03));
  // p4d: 4 NICs, each shared by two GPUs: 4 channels -> 4 x 11.25 GB/s.
  CHECK(allreduce_busbw(host("p4d.24xlarge", 2), Bytes::GiB(1), 4) == Approx(45.0).epsilon(0.03));
}
