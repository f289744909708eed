#pragma once
// Helpers shared by the topology tests.

#include <string>

#include "topology/cluster.h"
#include "topology/topology.h"

namespace meshsim::topology::test {

inline Topology cluster(const std::string& preset, int hosts = 1,
                        FabricKind fabric = FabricKind::single_switch) {
  ClusterSpec s;
  s.host_preset = preset;
  s.hosts = hosts;
  s.fabric.kind = fabric;
  return build_cluster(s);
}

/// 4 DGX-H100 on a 2:1 fat tree of 16 NICs per leaf: hosts 0-1 under leaf
/// 0, hosts 2-3 under leaf 1, each leaf with 8 uplinks of one NIC rate
/// (8 spines), routed by `routing`.
inline Topology two_leaf_tree(RoutingPolicy routing) {
  ClusterSpec s;
  s.host_preset = "dgx-h100";
  s.hosts = 4;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.nics_per_leaf = 16;
  s.fabric.oversubscription = 2;
  Topology t = build_cluster(s);
  t.routing = routing;
  return t;
}

/// 8 DGX-A100 (8 NICs of 200 Gb/s each), one host per leaf of 8 NICs: 8
/// leaves, in pods of 2: a three-level fat tree of 4 pods, 8 spines per pod
/// and (non-blocking) 2 cores.
inline ClusterSpec pods_of_two() {
  ClusterSpec s;
  s.host_preset = "dgx-a100";
  s.hosts = 8;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.nics_per_leaf = 8;
  s.fabric.leaves_per_pod = 2;
  return s;
}

/// Σ lanes of the NVLink links joining two named nodes (0 if none).
inline int nvlink_lanes(const Topology& t, const std::string& a, const std::string& b) {
  const NodeId x = t.at(a);
  const NodeId y = t.at(b);
  int lanes = 0;
  for (const Link& l : t.links())
    if (l.kind == LinkKind::nvlink && ((l.a == x && l.b == y) || (l.a == y && l.b == x))) lanes += l.count;
  return lanes;
}

/// Names of the nodes a route visits, endpoints included, joined by " ".
inline std::string path_of(const Topology& t, const Route& r) {
  std::string out = t.node(r.src).name;
  for (const Hop& h : r.hops) out += " " + t.node(h.to).name;
  return out;
}

/// Number of network switches a route crosses.
inline int switches_on(const Topology& t, const Route& r) {
  int n = 0;
  for (const Hop& h : r.hops) n += t.node(h.to).kind == NodeKind::network_switch ? 1 : 0;
  return n;
}

}  // namespace meshsim::topology::test
