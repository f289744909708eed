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
  [[nodiscard]] bool is_switch(topology::NodeId n) const;

  const topology::Topology& topo_;
  topology::RoutingPolicy policy_;
  std::vector<std::uint32_t> load_;  // per directed link: flows handed out, not released
  // For each network switch: (neighbour switch, directed link to it).
  std::vector<std::vector<std::pair<topology::NodeId, topology::DirLinkId>>> up_;
  std::unordered_map<std::uint64_t, topology::DirLinkId> between_;  // (from << 32 | to) → link
};

}  // namespace meshsim::sim
