#include <map>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "tests/topology/test_util.h"
#include "topology/routing_detail.h"

using namespace meshsim;
using namespace meshsim::topology;
using namespace meshsim::topology::test;

TEST_CASE("inside a host, GPUs talk over NVLink when they have it", "[routing]") {
  const Topology t = cluster("p3.16xlarge");
  // gpu0-gpu3 is NV2: one hop, 2 × 25 GB/s × 0.8 = 40 GB/s effective.
  const Route& r03 = t.route(t.at("h0/gpu0"), t.at("h0/gpu3"));
  CHECK(path_of(t, r03) == "h0/gpu0 h0/gpu3");
  CHECK(r03.bottleneck == Bandwidth::GBps(40));
  CHECK(r03.latency == Time::ns(500));
  // gpu0-gpu5 has no NVLink path that avoids forwarding through a GPU:
  // PCIe up to socket 0, across to socket 1, down to gpu5. Bottleneck: the
  // Gen3 x16 links, 16 GB/s × 0.75 = 12 GB/s (the socket link gives 15).
  const Route& r05 = t.route(t.at("h0/gpu0"), t.at("h0/gpu5"));
  CHECK(path_of(t, r05) == "h0/gpu0 h0/pcie0 h0/cpu0 h0/cpu1 h0/pcie2 h0/gpu5");
  CHECK(r05.bottleneck == Bandwidth::GBps(12));
  CHECK(r05.latency == Time::ns(4 * 250 + 300));
  // NVSwitch hosts: every pair is GPU -> NVSwitch -> GPU, 12 × 20 GB/s on A100.
  const Topology a = cluster("dgx-a100");
  const Route& ra = a.route(a.at("h0/gpu1"), a.at("h0/gpu6"));
  CHECK(path_of(a, ra) == "h0/gpu1 h0/nvswitch h0/gpu6");
  CHECK(ra.bottleneck == Bandwidth::GBps(240));
}

TEST_CASE("between hosts: GPU -> PCIe -> NIC -> fabric -> NIC -> PCIe -> GPU", "[routing]") {
  // 5 × p3.8xlarge on one 10 Gbps switch: 8 hops; latency 3 PCIe hops per
  // side (250 ns each) + 2 NIC hops (25 us each) = 51.5 us; bottleneck the
  // NIC, 10 Gb/s × 0.9 = 9 Gb/s.
  const Topology t = cluster("p3.8xlarge", 5);
  const Route& r = t.route(t.at("h0/gpu0"), t.at("h3/gpu2"));
  CHECK(path_of(t, r) == "h0/gpu0 h0/pcie0 h0/cpu0 h0/nic0 switch0 h3/nic0 h3/cpu0 h3/pcie1 h3/gpu2");
  CHECK(r.latency == Time::ns(6 * 250) + Time::us(50));
  CHECK(r.bottleneck == Bandwidth::Gbps(9));
  CHECK(switches_on(t, r) == 1);
}

TEST_CASE("rail-optimised fabric: same-index GPUs are one switch apart", "[routing]") {
  ClusterSpec s;
  s.host_preset = "dgx-h100";
  s.hosts = 6;
  s.fabric.kind = FabricKind::rail;
  s.fabric.hosts_per_unit = 4;  // two units: hosts 0-3 and 4-5
  const Topology t = build_cluster(s);
  for (int k = 0; k < 8; ++k) {
    INFO("rail " << k);
    const Route& r = t.route(t.at(fmt::format("h0/gpu{}", k)), t.at(fmt::format("h2/gpu{}", k)));
    CHECK(path_of(t, r) ==
          fmt::format("h0/gpu{0} h0/pcie{0} h0/nic{0} leaf{0} h2/nic{0} h2/pcie{0} h2/gpu{0}", k));
  }
  // Different rails in one unit go up to a spine: leaf3 -> spine -> leaf5.
  const Route& cross = t.route(t.at("h0/gpu3"), t.at("h1/gpu5"));
  REQUIRE(cross.hops.size() == 8);
  CHECK(t.node(cross.hops[2].to).name == "leaf3");
  CHECK(t.node(cross.hops[3].to).name.rfind("spine", 0) == 0);
  CHECK(t.node(cross.hops[4].to).name == "leaf5");
  // Across units, even the same rail needs a spine: leaf2 (unit 0) -> spine -> leaf10 (unit 1).
  const Route& far = t.route(t.at("h1/gpu2"), t.at("h5/gpu2"));
  CHECK(switches_on(t, far) == 3);
  CHECK(t.node(far.hops[4].to).name == "leaf10");
}

TEST_CASE("fat tree: same leaf is one switch, else leaf-spine-leaf", "[routing]") {
  ClusterSpec s;
  s.host_preset = "dgx-a100";
  s.hosts = 8;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.nics_per_leaf = 16;  // 64 NICs -> 4 leaves, hosts 2i and 2i+1 on leaf i
  const Topology t = build_cluster(s);
  const Route& near = t.route(t.at("h0/gpu0"), t.at("h1/gpu7"));
  CHECK(switches_on(t, near) == 1);
  CHECK(near.hops.size() == 6);
  const Route& far = t.route(t.at("h0/gpu0"), t.at("h5/gpu0"));
  CHECK(switches_on(t, far) == 3);
  CHECK(far.hops.size() == 8);
  // NIC hops 0.9 us × 2, switch hops 150 ns × 2, PCIe 250 ns × 4.
  CHECK(far.latency == Time::ns(2 * 900 + 2 * 150 + 4 * 250));
}

TEST_CASE("equal-cost spines are spread over endpoint pairs", "[routing]") {
  // 8 x DGX-A100, 16 NICs per leaf: 4 leaves (hosts 2i, 2i+1 on leaf i) and
  // 16 spines of equal cost. Over the 48 x 16 NIC pairs on different leaves
  // from leaf 0 (768 routes), every spine is used, none by more than twice
  // its fair share (48), as hash-spread (ECMP-like) routing gives; the old
  // lowest-id rule put all 768 on spine0.
  ClusterSpec s;
  s.host_preset = "dgx-a100";
  s.hosts = 8;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.nics_per_leaf = 16;
  const Topology t = build_cluster(s);
  std::map<std::string, int> use;
  for (int a = 0; a < 2; ++a)
    for (int b = 2; b < 8; ++b)
      for (int x = 0; x < 8; ++x)
        for (int y = 0; y < 8; ++y) {
          const Route& r =
              t.route(t.at(fmt::format("h{}/gpu{}", a, x)), t.at(fmt::format("h{}/gpu{}", b, y)));
          REQUIRE(switches_on(t, r) == 3);
          ++use[t.node(r.hops[3].to).name];
        }
  CHECK(use.size() == 16);
  for (const auto& [spine, n] : use) {
    INFO(spine);
    CHECK(n <= 96);
  }
}

TEST_CASE("routes are deterministic and cached", "[routing]") {
  ClusterSpec s;
  s.host_preset = "dgx-h100";
  s.hosts = 4;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.nics_per_leaf = 8;
  const Topology a = build_cluster(s);
  const Topology b = build_cluster(s);
  for (NodeId x : a.gpus())
    for (NodeId y : a.gpus()) {
      const Route& ra = a.route(x, y);
      const Route& rb = b.route(x, y);
      REQUIRE(path_of(a, ra) == path_of(b, rb));
      CHECK(&a.route(x, y) == &ra);  // second call: the cached route
    }
}

TEST_CASE("routes computed from several threads agree with sequential ones", "[routing]") {
  const Topology seq = cluster("dgx-a100", 4, FabricKind::rail);
  const Topology par = cluster("dgx-a100", 4, FabricKind::rail);
  const auto& g = par.gpus();
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&, w] {
      for (std::size_t i = static_cast<std::size_t>(w); i < g.size(); i += 4)
        for (NodeId y : g) (void)par.route(g[i], y);
    });
  for (auto& th : workers) th.join();
  for (NodeId x : g)
    for (NodeId y : g) CHECK(path_of(seq, seq.route(x, y)) == path_of(par, par.route(x, y)));
}

TEST_CASE("route to self is empty, unknown devices are named in the error", "[routing]") {
  const Topology t = cluster("dgx-a100");
  const Route& r = t.route(t.at("h0/gpu2"), t.at("h0/gpu2"));
  CHECK(r.hops.empty());
  CHECK(r.latency == Time::zero());
  CHECK_THROWS_WITH(t.at("h0/gpu9"), Catch::Matchers::Contains("no device named \"h0/gpu9\""));
  CHECK_THROWS_AS(t.at("gpu0"), UsageError);
}

TEST_CASE("a GPU with no way out of its host has no route, and says why", "[routing]") {
  Topology t;
  t.add_host(Host{"a", ""});
  t.add_host(Host{"b", ""});
  const NodeId g0 = t.add_node(Node{"a/gpu0", NodeKind::gpu, 0, "X"});
  const NodeId g1 = t.add_node(Node{"b/gpu0", NodeKind::gpu, 1, "X"});
  CHECK_THROWS_WITH(t.route(g0, g1), Catch::Matchers::Contains("a/gpu0 has no NIC"));
}

TEST_CASE("a moved-from topology reports misuse instead of crashing", "[routing]") {
  Topology a = cluster("p3.8xlarge");
  const Topology b = std::move(a);
  CHECK(b.route(b.at("h0/gpu0"), b.at("h0/gpu3")).hops.size() == 1);
  CHECK_THROWS_AS((void)a.route(0, 1), InternalError);  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("GPUs leave through a NIC that is joined to the fabric", "[routing]") {
  // Host a has nic0 (unconnected) and nic1 (on the switch), both one PCIe
  // hop from the GPU: the GPU uses nic1.
  Topology t;
  t.add_host(Host{"a", ""});
  t.add_host(Host{"b", ""});
  const NodeId g = t.add_node(Node{"a/gpu0", NodeKind::gpu, 0, {}});
  const NodeId n0 = t.add_node(Node{"a/nic0", NodeKind::nic, 0, {}});
  const NodeId n1 = t.add_node(Node{"a/nic1", NodeKind::nic, 0, {}});
  const NodeId h = t.add_node(Node{"b/gpu0", NodeKind::gpu, 1, {}});
  const NodeId m = t.add_node(Node{"b/nic0", NodeKind::nic, 1, {}});
  const NodeId sw = t.add_node(Node{"sw", NodeKind::network_switch, -1, {}});
  const Link pcie{LinkKind::pcie, g, n0, Bandwidth::GBps(16), 1, Time::ns(250), 1.0, 3, 16};
  t.add_link(pcie);
  Link p1 = pcie;
  p1.b = n1;
  t.add_link(p1);
  Link p2 = pcie;
  p2.a = h;
  p2.b = m;
  t.add_link(p2);
  t.add_link(Link{LinkKind::network, n1, sw, Bandwidth::Gbps(100), 1, Time::us(1), 1.0, 0, 0});
  t.add_link(Link{LinkKind::network, m, sw, Bandwidth::Gbps(100), 1, Time::us(1), 1.0, 0, 0});
  CHECK(*t.nic_of(g) == n1);
  CHECK(path_of(t, t.route(g, h)) == "a/gpu0 a/nic1 sw b/nic0 b/gpu0");
}

TEST_CASE("fabric routes from the per-leaf search equal a direct search per NIC pair", "[routing]") {
  // The fabric part of a GPU route comes from one cached search per leaf,
  // with the equal-cost spine chosen per NIC pair by the same hash a direct
  // shortest-path search from NIC to NIC uses: both give the same links.
  ClusterSpec s;
  s.host_preset = "dgx-a100";
  s.hosts = 8;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.nics_per_leaf = 16;
  s.fabric.oversubscription = 2;
  const Topology t = build_cluster(s);
  int checked = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const NodeId ga = t.at(fmt::format("h{}/gpu{}", a, (a + b) % 8));
      const NodeId gb = t.at(fmt::format("h{}/gpu{}", b, (3 * a + b) % 8));
      const auto direct = shortest_path(t, *t.nic_of(ga), *t.nic_of(gb), network_rules());
      REQUIRE(direct);
      const Route& r = t.route(ga, gb);
      std::vector<DirLinkId> fabric;
      for (const Hop& h : r.hops)
        if (t.link(h.link).kind == LinkKind::network) fabric.push_back(h.dlink);
      CHECK(fabric == direct->links());
      ++checked;
    }
  CHECK(checked == 56);
}
