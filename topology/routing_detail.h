#pragma once
// Internal to topology/: the lazily computed parts of a Topology (NIC
// assignment, route cache) and the path search they use.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "topology/topology.h"

namespace meshsim::topology {

inline constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();

/// The equal-cost shortest paths from one fabric switch to every switch it
/// reaches: for each, its label and the directed links that end an
/// equal-cost path into it.
struct FabricDag {
  struct Entry {
    Time latency;
    Bandwidth bottleneck;
    std::uint32_t hops = 0;
    std::vector<DirLinkId> preds;
  };
  std::unordered_map<NodeId, Entry> at;
};

struct Topology::Derived {
  std::once_flag nics_once;
  std::vector<NodeId> nic_of;  // per node; kNoNode for non-GPUs or hosts without NIC
  std::mutex mutex;
  std::unordered_map<std::uint64_t, Route> routes;
  // Per (first switch, bottleneck so far): see fabric_segment in routing.cpp.
  std::map<std::pair<NodeId, std::int64_t>, std::shared_ptr<const FabricDag>> dags;
};

/// Which links a path segment may use and which nodes it may pass through.
struct SegmentRules {
  std::function<bool(const Link&)> use_link;
  std::function<bool(const Node&)> transit;  // intermediate nodes only
};

/// The fabric's rules: network links, through network switches only.
[[nodiscard]] const SegmentRules& network_rules();

/// Shortest path from src to dst under `rules`: least latency, then widest
/// bottleneck capacity, then lowest node ids. nullopt if unreachable.
[[nodiscard]] std::optional<Route> shortest_path(const Topology& t, NodeId src, NodeId dst,
                                                 const SegmentRules& rules);

/// Latency of the shortest path from `src` to every node it reaches under
/// `rules` (nodes it does not reach are absent).
[[nodiscard]] std::vector<std::pair<NodeId, Time>> latencies_from(const Topology& t, NodeId src,
                                                                  const SegmentRules& rules);

/// The NIC each GPU leaves its host through (kNoNode for other nodes).
[[nodiscard]] std::vector<NodeId> assign_nics(const Topology& t);

}  // namespace meshsim::topology
