#include <optional>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "sim/executor.h"
#include "sim/ring_order.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::plan;
using namespace meshsim::topology;

namespace {

Topology host(const char* preset, int hosts = 1) {
  ClusterSpec s;
  s.host_preset = preset;
  s.hosts = hosts;
  return build_cluster(s);
}

Topology cluster(const char* preset, int hosts, FabricKind fabric,
                 RoutingPolicy routing = RoutingPolicy::ecmp) {
  ClusterSpec s;
  s.host_preset = preset;
  s.hosts = hosts;
  s.fabric.kind = fabric;
  Topology t = build_cluster(s);
  t.routing = routing;
  return t;
}

struct Forced {
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
  int channels = 0;
};

// One all-reduce over every GPU of `t`; the task as simulated.
SimResult run_allreduce(const Topology& t, Bytes size, const Forced& f) {
  Plan p;
  Task task;
  task.id = "ar";
  task.kind = TaskKind::collective;
  task.op = CollectiveOp::all_reduce;
  task.size = size;
  task.algorithm = f.algorithm;
  task.protocol = f.protocol;
  task.channels = f.channels;
  for (NodeId g : t.gpus()) task.devices.push_back(device_index(p, t.node(g).name));
  p.tasks.push_back(task);
  return simulate(p, t);
}

// nccl-tests busbw (GB/s) of an all-reduce over every GPU of `t`.
double allreduce_busbw(const Topology& t, Bytes size = Bytes::GiB(1), const Forced& f = {}) {
  const double n = static_cast<double>(t.gpus().size());
  const double algbw = static_cast<double>(size.count()) / run_allreduce(t, size, f).makespan.seconds();
  return algbw * 2 * (n - 1) / n / 1e9;
}

const Forced kRing{Algorithm::ring, Protocol::simple, 0};

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

TEST_CASE("1 GiB ring all-reduce busbw on one host is credible against nccl-tests", "[collective][presets]") {
  // Published nccl-tests figures: 8 x A100 ~230 GB/s; 8 x H100 ring 365-370 GB/s.
  // Our model: 12 x 20 GB/s = 240 and 18 x 20.6 = 370.8 per GPU, less
  // NCCL's ring/Simple latency (8.4 us + 14 x 3.4 us) on 1 GiB.
  CHECK(allreduce_busbw(host("dgx-a100"), Bytes::GiB(1), kRing) == Approx(238.3).margin(1.0));
  CHECK(allreduce_busbw(host("p4d.24xlarge"), Bytes::GiB(1), kRing) == Approx(238.3).margin(1.0));
  const double h100_ring = allreduce_busbw(host("dgx-h100"), Bytes::GiB(1), kRing);
  CHECK(h100_ring >= 365.0);
  CHECK(h100_ring <= 375.0);
  // V100 cube mesh, one ring of NV2 edges: 2 x 20 GB/s = 40 GB/s.
  CHECK(allreduce_busbw(host("p3.16xlarge"), Bytes::GiB(1), kRing) == Approx(40.0).margin(0.5));
}

TEST_CASE("default selection: NVLS on H100 hosts, ring on A100 hosts", "[collective][presets]") {
  // NVLS moves (n+1)/n of the data each way per GPU at 0.85 of the link rate:
  // busbw = 2(n-1)/n x 370.8 x 0.85 x n/(n+1) = 490 GB/s for n = 8; nccl-tests
  // reports ~480 (H100) and 475 (H200). A100 has no NVLS: the ring, ~230.
  const SimResult h = run_allreduce(host("dgx-h100"), Bytes::GiB(1), {});
  CHECK(h.collectives[0].algorithm == Algorithm::nvls);
  const double busbw = allreduce_busbw(host("dgx-h100"));
  CHECK(busbw == Approx(480.0).epsilon(0.10));
  CHECK(run_allreduce(host("dgx-a100"), Bytes::GiB(1), {}).collectives[0].algorithm == Algorithm::ring);
  CHECK(allreduce_busbw(host("dgx-a100")) == Approx(230.0).epsilon(0.10));
  // 2 x 8 H200 on rails: NVLS inside each host, trees between: 460-490 +-10 %.
  const double h200 = allreduce_busbw(cluster("dgx-h200", 2, FabricKind::rail));
  CHECK(h200 >= 460.0 * 0.9);
  CHECK(h200 <= 490.0 * 1.1);
}

TEST_CASE("8-byte all-reduce across two DGX-H100 pays NCCL's latencies, not the ring's",
          "[collective][presets]") {
  // Published 2-node small-message all-reduce: 30-60 us. The tree with LL:
  // 6.8 us + 2 x (7 chain steps + 1 network step). A chain step is the
  // route's 1 us (two 0.5 us NVSwitch hops; NCCL's LL table says 0.6); the
  // network step NCCL's 5 us (the route is 2.8 us): 30.8 us.
  const Topology t = cluster("dgx-h100", 2, FabricKind::rail);
  const SimResult r = run_allreduce(t, Bytes(8), {});
  CHECK(r.collectives[0].algorithm == Algorithm::tree);
  CHECK(r.collectives[0].protocol == Protocol::ll);
  CHECK(r.makespan <= Time::us(60));
  CHECK(r.makespan.microseconds() == Approx(30.8).margin(0.1));
}

TEST_CASE("across hosts the NIC sets the ring all-reduce busbw", "[collective][presets]") {
  // 2 x p3.8xlarge at 10 Gb/s (x 0.9): the ring crosses the network twice,
  // each crossing one NIC per direction: busbw -> 9 Gb/s = 1.125 GB/s.
  CHECK(allreduce_busbw(host("p3.8xlarge", 2), Bytes::MiB(256), kRing) == Approx(1.125).epsilon(0.01));
}

TEST_CASE("channels put one ring on every NIC across hosts", "[collective][presets]") {
  // 2 x DGX-A100 on rails: one ring is held to one 200 Gb/s NIC pair
  // (x 0.96 = 24 GB/s); 8 channels, each entering and leaving every host
  // through its own NIC, reach 8 x 24 = 192 GB/s less latency (the figure
  // NVIDIA quotes for 8 x 200 Gb/s IB).
  const Topology t = cluster("dgx-a100", 2, FabricKind::rail);
  CHECK(allreduce_busbw(t, Bytes::GiB(1), {Algorithm::ring, Protocol::simple, 1}) ==
        Approx(24.0).epsilon(0.02));
  CHECK(allreduce_busbw(t, Bytes::GiB(1), {Algorithm::ring, Protocol::simple, 8}) ==
        Approx(192.0).epsilon(0.03));
  // p4d: 4 NICs, each shared by two GPUs: 4 channels -> 4 x 11.25 GB/s.
  CHECK(allreduce_busbw(host("p4d.24xlarge", 2), Bytes::GiB(1), {Algorithm::ring, Protocol::simple, 4}) ==
        Approx(45.0).epsilon(0.03));
}

TEST_CASE("rail-aligned rings stay on their rail: no spine traffic inside a unit", "[collective][presets]") {
  // 4 DGX-H100 in one rail unit: channel c enters and leaves every host
  // through NIC c, so no byte climbs to a spine.
  const Topology t = cluster("dgx-h100", 4, FabricKind::rail);
  const SimResult r = run_allreduce(t, Bytes::GiB(1), kRing);
  for (LinkId l = 0; l < t.link_count(); ++l) {
    const auto& link = t.link(l);
    const bool spine = t.node(link.a).name.starts_with("spine") || t.node(link.b).name.starts_with("spine");
    if (!spine) continue;
    CHECK(r.link_bytes[Topology::directed(l, false)] == 0.0);
    CHECK(r.link_bytes[Topology::directed(l, true)] == 0.0);
  }
}

TEST_CASE("busbw stays flat from 16 to 256 hosts on rails and adaptive fat trees",
          "[collective][presets][slow]") {
  // A 1 GiB all-reduce over DGX-H100 at 400 Gb/s keeps >= 90 % of its
  // 16-host busbw at 256 hosts (2,048 GPUs).
  for (const auto& [fabric, routing] : {std::pair{FabricKind::rail, RoutingPolicy::ecmp},
                                        std::pair{FabricKind::fat_tree, RoutingPolicy::adaptive}}) {
    const double small = allreduce_busbw(cluster("dgx-h100", 16, fabric, routing));
    const double large = allreduce_busbw(cluster("dgx-h100", 256, fabric, routing));
    INFO("fabric " << to_string(fabric) << ": 16 hosts " << small << " GB/s, 256 hosts " << large);
    CHECK(large >= 0.9 * small);
  }
}

TEST_CASE("a 2:1 fat tree is slower than 1:1 once rings span leaves", "[collective][presets]") {
  // One DGX-H100 per leaf (8 NICs): every ring hop between hosts leaves its
  // leaf; 8 channels climb at once. 1:1 gives 8 spines (one NIC-rate lane
  // each, adaptive routing puts one channel on each); 2:1 gives 4, so two
  // channels share each uplink and the network halves the busbw.
  auto ft = [](double oversub) {
    ClusterSpec s;
    s.host_preset = "dgx-h100";
    s.hosts = 4;
    s.fabric.kind = FabricKind::fat_tree;
    s.fabric.nics_per_leaf = 8;
    s.fabric.oversubscription = oversub;
    Topology t = build_cluster(s);
    t.routing = RoutingPolicy::adaptive;
    return t;
  };
  const double full = allreduce_busbw(ft(1.0), Bytes::GiB(1), kRing);
  const double half = allreduce_busbw(ft(2.0), Bytes::GiB(1), kRing);
  CHECK(half < 0.6 * full);
}

TEST_CASE("a GB200 NVL72 is one NVLink domain of 72 GPUs, and NVLS runs over all of them", "[presets]") {
  // Every GPU has its 18 NVLink 5 lanes into the switch trays (900 GB/s a
  // direction), the same links as a DGX B200's GPUs. An NVLS all-reduce
  // over g GPUs moves (g+1)/g of the buffer each way over each GPU's own
  // links, so its busbw, algbw · 2(g−1)/g, is 2B(g−1)/(g+1): over 72 GPUs
  // (71/73) / (7/9) = 1.2505 times what it is over a DGX B200's 8.
  const Topology nvl72 = host("gb200-nvl72");
  REQUIRE(nvl72.gpus().size() == 72);
  REQUIRE(nvl72.host_count() == 1);
  const SimResult r = run_allreduce(nvl72, Bytes::GiB(1), {});
  REQUIRE(r.collectives.size() == 1);
  CHECK(r.collectives.front().algorithm == Algorithm::nvls);
  const double busbw72 = allreduce_busbw(nvl72);
  const double busbw8 = allreduce_busbw(host("dgx-b200"));
  CHECK(busbw72 / busbw8 == Approx((71.0 / 73) / (7.0 / 9)).epsilon(0.01));
}

TEST_CASE("in-network reduction on 16 DGX-H100: NVLS across hosts at every size, by hand",
          "[collective][presets][sharp]") {
  Topology t = cluster("dgx-h100", 16, FabricKind::fat_tree);
  // Off by default, as NCCL_COLLNET_ENABLE is: the tree with LL for 8 bytes,
  // 6.8 + 2 x (7 chain steps of 1 us + 4 network steps of 5 us) = 60.8 us.
  CHECK(run_allreduce(t, Bytes(8), {}).collectives[0].algorithm == Algorithm::tree);
  CHECK_THROWS_WITH(run_allreduce(t, Bytes(8), {Algorithm::collnet_direct, Protocol::simple, 0}),
                    Catch::Matchers::Contains("needs switches that reduce: --sharp"));
  t.sharp = true;  // QM9700 leaves and spines run SHARPv3
  // NVLS inside each host, the switches across: NCCL's latency 25 (NVLink
  // NVLS) + 18 (network NVLS) = 43 us, below the tree's 60.8 at every size.
  const SimResult small = run_allreduce(t, Bytes(8), {});
  CHECK(small.collectives[0].algorithm == Algorithm::nvls);
  CHECK(small.makespan.microseconds() == Approx(43.0).margin(0.01));
  // 1 GiB: each GPU moves (g+1)/g = 9/8 of the data each way over its
  // NVLink (18 x 25 GB/s x 0.824 = 370.8 GB/s) at NVLS's 0.85; each NIC
  // only S/8 each way (the switches reduce), 47 GB/s: not the limit. algbw
  // = 370.8 x 0.85 x 8/9 = 280.16 GB/s; busbw = S / (S/algbw + 43 us) x
  // 2 x 127/128 = 549.8 GB/s, above the 8 NICs' 376 GB/s a ring could reach.
  const SimResult big = run_allreduce(t, Bytes::GiB(1), {});
  CHECK(big.collectives[0].algorithm == Algorithm::nvls);
  const double s = static_cast<double>(Bytes::GiB(1).count());
  CHECK(allreduce_busbw(t) == Approx(s / (s / 280.16e9 + 43e-6) * 2 * 127 / 128 / 1e9).epsilon(0.002));
  // CollNetDirect: every GPU sends each other GPU's head its 1/8 and gets
  // the heads' results back, 7/8 + 7/8 = 1.75 S each way over NVLink:
  // algbw 370.8 / 1.75 = 211.9 GB/s; latency 2 x (3.7 + 7 x 0.4) + 31 = 44 us.
  const Forced direct{Algorithm::collnet_direct, Protocol::simple, 0};
  CHECK(run_allreduce(t, Bytes(8), direct).makespan.microseconds() == Approx(44.0).margin(0.01));
  CHECK(allreduce_busbw(t, Bytes::GiB(1), direct) ==
        Approx(s / (1.75 * s / 370.8e9 + 44e-6) * 2 * 127 / 128 / 1e9).epsilon(0.002));
  // CollNetChain moves the same 1.75 S per GPU; its latency is the chain's,
  // 2 x 7 x 2.8 + 30 = 69.2 us.
  const Forced chain{Algorithm::collnet_chain, Protocol::simple, 0};
  CHECK(run_allreduce(t, Bytes(8), chain).makespan.microseconds() == Approx(69.2).margin(0.01));
}

TEST_CASE("in-network reduction without NVLS: CollNetDirect on 16 DGX-A100", "[collective][presets][sharp]") {
  Topology t = cluster("dgx-a100", 16, FabricKind::fat_tree);  // QM8700: SHARPv2
  t.sharp = true;
  // A100 NVLink: 12 x 25 GB/s x 0.8 = 240 GB/s; 1.75 S each way: algbw
  // 137.1 GB/s (HDR NICs carry S/8 each way at 24 GB/s: 192, not the limit).
  const SimResult r = run_allreduce(t, Bytes::GiB(1), {});
  CHECK(r.collectives[0].algorithm == Algorithm::collnet_direct);
  const double s = static_cast<double>(Bytes::GiB(1).count());
  CHECK(allreduce_busbw(t) == Approx(s / (1.75 * s / 240e9 + 44e-6) * 2 * 127 / 128 / 1e9).epsilon(0.002));
  // A fabric of switches that do not reduce refuses it, naming the cause.
  Topology aws = cluster("p4d.24xlarge", 2, FabricKind::fat_tree);
  aws.sharp = true;
  CHECK_THROWS_WITH(run_allreduce(aws, Bytes::MiB(1), {Algorithm::collnet_direct, Protocol::simple, 0}),
                    Catch::Matchers::Contains("on a fabric of SHARP switches"));
}
