#pragma once
// Paths for flows under a routing policy.
//
//   ecmp      the topology's deterministic route (topology.h): equal-cost
//             paths are spread by a fixed hash of the endpoints, so two flows
//             may land on one uplink while another idles, as with ECMP.
//   adaptive  each new flow takes, at every switch → switch → switch turn of
//             its route (leaf → spine → leaf), the middle switch whose two
//             links carry the fewest flows this router has handed out and
//             not yet released (ties: the hashed route's own choice, then
//             the lowest id), as InfiniBand adaptive routing and Spectrum-X
//             do. Only equal-cost alternatives are taken: the same hop
//             latencies and at least the same capacity.
//   deterministic  destination-based, as an InfiniBand subnet manager's
//             fat-tree routing engine programs the switches: every flow to
//             one destination NIC turns at the same middle switch, from
//             every source. The destinations are numbered in the order
//             their NICs were built (the order the subnet manager hands out
//             addresses host by host), and destination d turns at the
//             (d mod k)-th of the k equal-cost middle switches, by node id:
//             the destinations under one leaf take the spines in turn
//             (D-mod-K, the rule of OpenSM's ftree engine: a shift pattern,
//             each source sending to one destination, meets no shared
//             uplink on a non-blocking tree). On a three-level tree the
//             pod spines, up and down, turn at d mod k0 and the core at
//             (d / k0) mod k1: one digit of d per level.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "topology/topology.h"

namespace meshsim::sim {

class Router {
 public:
  Router(const topology::Topology& topo, topology::RoutingPolicy policy);

  /// The directed links of a flow from `a` to `b`; under `adaptive` the
  /// flow counts as loading them until release().
  [[nodiscard]] std::vector<topology::DirLinkId> path(topology::NodeId a, topology::NodeId b);
  /// The flow on `path` has finished.
  void release(const std::vector<topology::DirLinkId>& path);

  [[nodiscard]] topology::RoutingPolicy policy() const { return policy_; }

 private:
  void rebalance(std::vector<topology::DirLinkId>& p) const;
  void by_destination(std::vector<topology::DirLinkId>& p) const;
  // The middle switches s' equal in cost to s at turn u → s → v, s first,
  // then the others in link order, each with its links u → s' and s' → v.
  struct Turn {
    topology::NodeId mid;
    topology::DirLinkId in, out;
  };
  [[nodiscard]] std::vector<Turn> equal_turns(topology::DirLinkId first, topology::DirLinkId second) const;
  [[nodiscard]] bool is_switch(topology::NodeId n) const;
  [[nodiscard]] bool is_turn(topology::DirLinkId first, topology::DirLinkId second) const;

  const topology::Topology& topo_;
  topology::RoutingPolicy policy_;
  std::vector<std::uint32_t> load_;  // per directed link: flows handed out, not released
  // For each network switch: (neighbour switch, directed link to it).
  std::vector<std::vector<std::pair<topology::NodeId, topology::DirLinkId>>> up_;
  std::unordered_map<std::uint64_t, topology::DirLinkId> between_;  // (from << 32 | to) → link
  std::vector<std::uint32_t> destination_;  // deterministic: per NIC on the fabric, its number
};

}  // namespace meshsim::sim
