// Fat trees of two and three levels as the cluster builder makes them.
#include <map>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "tests/topology/test_util.h"

using namespace meshsim;
using namespace meshsim::topology;
using namespace meshsim::topology::test;

namespace {

// The network links between switches whose names start with `a` and `b`,
// by (lanes, rate in bits per second) and how many of each.
std::map<std::pair<int, std::int64_t>, int> links_between(const Topology& t, const std::string& a,
                                                          const std::string& b) {
  std::map<std::pair<int, std::int64_t>, int> out;
  for (const Link& l : t.links()) {
    const std::string& x = t.node(l.a).name;
    const std::string& y = t.node(l.b).name;
    if ((x.starts_with(a) && y.starts_with(b)) || (x.starts_with(b) && y.starts_with(a)))
      ++out[{l.count, l.bandwidth.bps()}];
  }
  return out;
}

int switches_named(const Topology& t, const std::string& prefix) {
  int n = 0;
  for (const Node& node : t.nodes())
    n += node.kind == NodeKind::network_switch && node.name.starts_with(prefix) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("three-level fat tree: each pod has its own spines, every pod spine joins every core",
          "[fat-tree]") {
  // Non-blocking: a leaf's 8 NIC lanes go up as one lane to each of its
  // pod's 8 spines; a pod spine has 2 lanes down (its pod's 2 leaves), so
  // 2 cores take one lane each.
  const Topology t = build_cluster(pods_of_two());
  const std::int64_t nic = Bandwidth::Gbps(200).bps();
  CHECK(switches_named(t, "leaf") == 8);
  for (int pod = 0; pod < 4; ++pod) CHECK(switches_named(t, fmt::format("pod{}-spine", pod)) == 8);
  CHECK(switches_named(t, "spine") == 0);
  CHECK(switches_named(t, "core") == 2);
  CHECK(links_between(t, "leaf", "pod") == std::map<std::pair<int, std::int64_t>, int>{{{1, nic}, 8 * 8}});
  CHECK(links_between(t, "pod", "core") == std::map<std::pair<int, std::int64_t>, int>{{{1, nic}, 32 * 2}});
  // Leaf 0 (host 0) joins pod 0's spines only.
  for (const Link& l : t.links()) {
    const std::string& a = t.node(l.a).name;
    const std::string& b = t.node(l.b).name;
    if (a == "leaf0") CHECK(b.starts_with("pod0-spine"));
    if (a == "leaf7") CHECK(b.starts_with("pod3-spine"));
  }
}

TEST_CASE("three-level fat tree: a pod's hosts turn at its spines, other pods' at a core", "[fat-tree]") {
  const Topology t = build_cluster(pods_of_two());
  const Route& pod = t.route(t.at("h0/gpu0"), t.at("h1/gpu0"));
  REQUIRE(switches_on(t, pod) == 3);
  const Route& far = t.route(t.at("h0/gpu0"), t.at("h6/gpu3"));
  REQUIRE(switches_on(t, far) == 5);
  std::vector<std::string> fabric;
  for (const Hop& h : far.hops)
    if (t.node(h.to).kind == NodeKind::network_switch) fabric.push_back(t.node(h.to).name);
  CHECK(fabric[0] == "leaf0");
  CHECK(fabric[1].starts_with("pod0-spine"));
  CHECK(fabric[2].starts_with("core"));
  CHECK(fabric[3].starts_with("pod3-spine"));
  CHECK(fabric[4] == "leaf6");
  // The same NIC and PCIe hops as the route inside the pod, and two more
  // switch-to-switch hops of 150 ns (four against two).
  CHECK(far.latency - pod.latency == Time::ns(2 * 150));
}

TEST_CASE("three-level fat tree: oversubscription at the leaves and at the pod spines", "[fat-tree]") {
  ClusterSpec s = pods_of_two();
  s.fabric.oversubscription = 2;       // 4 spines per pod, one lane from each leaf
  s.fabric.core_oversubscription = 2;  // a pod spine: 2 lanes down, 1 up: one core
  Topology t = build_cluster(s);
  const std::int64_t nic = Bandwidth::Gbps(200).bps();
  CHECK(switches_named(t, "pod0-spine") == 4);
  CHECK(switches_named(t, "core") == 1);
  CHECK(links_between(t, "pod", "core") == std::map<std::pair<int, std::int64_t>, int>{{{1, nic}, 16}});
  // Four cores given: each pod spine's one lane up is split in quarters.
  s.fabric.cores = 4;
  t = build_cluster(s);
  CHECK(links_between(t, "pod", "core") ==
        std::map<std::pair<int, std::int64_t>, int>{{{1, nic / 4}, 16 * 4}});
  CHECK(t.description.find("three-level fat tree, 4 pods x 2 leaves x 8 NICs, 4 spines per pod") !=
        std::string::npos);
}

TEST_CASE("a last pod with fewer leaves keeps a full pod's uplinks", "[fat-tree]") {
  ClusterSpec s = pods_of_two();
  s.hosts = 5;  // 5 leaves: pods of 2, 2 and 1
  const Topology t = build_cluster(s);
  CHECK(switches_named(t, "pod2-spine") == 8);
  CHECK(switches_named(t, "pod3-spine") == 0);
  CHECK(t.description.find("3 pods x 2 leaves (the last 1) x 8 NICs") != std::string::npos);
  // Every pod spine, the last pod's too, has 2 lanes up.
  CHECK(links_between(t, "pod", "core") ==
        std::map<std::pair<int, std::int64_t>, int>{{{1, Bandwidth::Gbps(200).bps()}, 24 * 2}});
}

TEST_CASE("pods that hold every leaf make the two-level tree, and say so", "[fat-tree]") {
  ClusterSpec s = pods_of_two();
  s.fabric.leaves_per_pod = 8;
  ClusterSpec two = s;
  two.fabric.leaves_per_pod = 0;
  const Topology t = build_cluster(s);
  CHECK(switches_named(t, "core") == 0);
  CHECK(t.description == build_cluster(two).description);
  const auto w = cluster_warnings(s);
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "leaves per pod has no effect: all 8 leaves fit in one pod of 8, which needs no core");
}

TEST_CASE("core options without a core are warned about", "[fat-tree]") {
  ClusterSpec s = pods_of_two();
  s.fabric.leaves_per_pod = 0;
  s.fabric.cores = 3;
  auto w = cluster_warnings(s);
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "cores has no effect on a two-level fat tree (give leaves per pod for a core)");
  s.fabric.kind = FabricKind::rail;
  s.fabric.leaves_per_pod = 2;
  w = cluster_warnings(s);
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "leaves per pod has no effect on a rail fabric (it shapes a fat tree's pods and core)");
}

TEST_CASE("bad pod and core parameters are refused by name", "[fat-tree]") {
  ClusterSpec s = pods_of_two();
  s.fabric.core_oversubscription = 0.5;
  CHECK_THROWS_WITH(build_cluster(s), "core oversubscription must be >= 1, got 0.5");
  s = pods_of_two();
  s.fabric.leaves_per_pod = -1;
  CHECK_THROWS_WITH(build_cluster(s), "leaves_per_pod must be >= 0 (0: two levels)");
  // 16,384 one-leaf pods of 8 spines, each joined to 4,096 cores: past the
  // fabric's link limit, refused before anything is built.
  s = pods_of_two();
  s.hosts = 16384;
  s.fabric.leaves_per_pod = 1;
  s.fabric.cores = 4096;
  CHECK_THROWS_WITH(build_cluster(s), Catch::Contains("536870912 core links"));
}
