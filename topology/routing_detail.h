#pragma once
// Internal to topology/: the lazily computed parts of a Topology (NIC
// assignment, route cache) and the path search they use.

#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "topology/topology.h"

namespace meshsim::topology {

inline constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();

struct Topology::Derived {
  std::once_flag nics_once;
  std::vector<NodeId> nic_of;  // per node; kNoNode for non-GPUs or hosts without NIC
  std::mutex mutex;
  std::unordered_map<std::uint64_t, Route> routes;
};

/// Which links a path segment may use and which nodes it may pass through.
struct SegmentRules {
  std::function<bool(const Link&)> use_link;
  std::function<bool(const Node&)> transit;  // intermediate nodes only
};

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
