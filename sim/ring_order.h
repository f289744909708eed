#pragma once
// Ring order that follows the topology, as NCCL builds its rings: the
// group's hosts in order of first appearance, so that the ring crosses
// each host boundary once (one NIC hop between consecutive hosts), and
// inside each host a greedy walk that always moves to the unvisited GPU
// with the widest route from the current one (NVLink neighbours first;
// ties to the lower index). On a p3.16xlarge cube mesh this gives
// 0 3 2 1 5 6 7 4: every ring edge is an NV2 or NV1 link.

#include <vector>

#include "topology/topology.h"

namespace meshsim::sim {

[[nodiscard]] std::vector<topology::NodeId> ring_order(const topology::Topology& t,
                                                       const std::vector<topology::NodeId>& group);

}  // namespace meshsim::sim
