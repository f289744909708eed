#include "sim/router.h"

#include <set>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "tests/topology/test_util.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::topology;

namespace {

// 2 DGX-H100, one per leaf (8 NICs per leaf), 8 spines: every route between
// the hosts climbs leaf0 -> spine -> leaf1.
Topology two_leaves() {
  ClusterSpec s;
  s.host_preset = "dgx-h100";
  s.hosts = 2;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.nics_per_leaf = 8;
  return build_cluster(s);
}

// The spine each path from h0/gpuk to h1/gpuk crosses.
std::set<std::string> spines_used(const Topology& t, Router& r) {
  std::set<std::string> out;
  for (int k = 0; k < 8; ++k)
    for (DirLinkId d : r.path(t.at(fmt::format("h0/gpu{}", k)), t.at(fmt::format("h1/gpu{}", k)))) {
      const auto& l = t.link(Topology::link_of(d));
      for (NodeId n : {l.a, l.b})
        if (t.node(n).name.starts_with("spine")) out.insert(t.node(n).name);
    }
  return out;
}

}  // namespace

TEST_CASE("adaptive routing puts eight concurrent flows on eight spines", "[router]") {
  // Each new flow takes the least-loaded of the 8 equal-cost spines: with
  // 8 flows outstanding, every spine carries exactly one.
  const Topology t = two_leaves();
  Router adaptive(t, RoutingPolicy::adaptive);
  CHECK(spines_used(t, adaptive).size() == 8);
  // ECMP hashes each pair on its own and may put two on one spine; it never
  // uses more spines than there are flows.
  Router ecmp(t, RoutingPolicy::ecmp);
  CHECK(spines_used(t, ecmp).size() <= 8);
}

TEST_CASE("adaptive routing forgets released flows", "[router]") {
  // One flow at a time: each released before the next starts, so every
  // flow finds all spines idle and keeps the hashed route's spine.
  const Topology t = two_leaves();
  Router adaptive(t, RoutingPolicy::adaptive);
  const NodeId a = t.at("h0/gpu3");
  const NodeId b = t.at("h1/gpu3");
  const auto first = adaptive.path(a, b);
  CHECK(first == t.route(a, b).links());
  adaptive.release(first);
  CHECK(adaptive.path(a, b) == first);
}

namespace {

// The spine a path crosses ("" when none).
std::string spine_of(const Topology& t, const std::vector<DirLinkId>& path) {
  for (DirLinkId d : path)
    if (t.node(t.to(d)).name.starts_with("spine")) return t.node(t.to(d)).name;
  return "";
}

}  // namespace

TEST_CASE("deterministic routing turns every flow to one destination at one spine, D mod K", "[router]") {
  // 4 DGX-H100 on 2 leaves of 16 NICs, 8 spines (spine0..spine7). The
  // fabric's NICs are numbered in build order, h0's 0-7 up to h3's 24-31;
  // destination d turns at spine d mod 8: NIC k of every host at spine k.
  const Topology t = topology::test::two_leaf_tree(RoutingPolicy::deterministic);
  Router r(t, RoutingPolicy::deterministic);
  for (int k = 0; k < 8; ++k) {
    const NodeId dst = t.at(fmt::format("h2/gpu{}", k));
    // From every GPU of both hosts of the other leaf: the same spine.
    std::set<std::string> spines;
    for (const char* src : {"h0", "h1"})
      for (int g = 0; g < 8; ++g)
        spines.insert(spine_of(t, r.path(t.at(fmt::format("{}/gpu{}", src, g)), dst)));
    CHECK(spines == std::set<std::string>{fmt::format("spine{}", k)});
    // The same destination NIC number on the other leaf's side: h0's NIC k, 0 + k.
    CHECK(spine_of(t, r.path(t.at("h3/gpu0"), t.at(fmt::format("h0/gpu{}", k)))) ==
          fmt::format("spine{}", k));
  }
  // Inside a leaf nothing turns at a spine.
  CHECK(spine_of(t, r.path(t.at("h0/gpu0"), t.at("h1/gpu3"))).empty());
}

TEST_CASE("deterministic routing on a three-level tree spreads each pod spine over every core", "[router]") {
  // 8 DGX-A100, one per leaf of 8 NICs, pods of 2 leaves: 8 spines per pod
  // and 2 cores. Taking d mod k at both turns would send destination d up
  // pod spine d mod 8 and on to core d mod 2, a function of the spine: each
  // pod spine would use one core of two. By digits, core (d / 8) mod 2; and
  // down, the destination pod's spine d mod 8 again.
  Topology t = build_cluster(topology::test::pods_of_two());
  t.routing = RoutingPolicy::deterministic;
  Router r(t, RoutingPolicy::deterministic);
  std::set<std::pair<std::string, std::string>> up;  // (pod spine, core) links climbed from pod 0
  for (int h = 2; h < 8; ++h)
    for (int g = 0; g < 8; ++g) {
      const auto path = r.path(t.at("h0/gpu0"), t.at(fmt::format("h{}/gpu{}", h, g)));
      for (DirLinkId d : path) {
        const std::string& from = t.node(t.from(d)).name;
        const std::string& to = t.node(t.to(d)).name;
        if (from.starts_with("pod0-spine") && to.starts_with("core")) up.emplace(from, to);
        if (from.starts_with("core")) CHECK(to == fmt::format("pod{}-spine{}", h / 2, (8 * h + g) % 8));
      }
    }
  CHECK(up.size() == 8 * 2);
}
