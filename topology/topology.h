#pragma once
// The topology model: devices and full-duplex links of GPU machines and the
// network between them.
//
// Nodes: gpu, nvswitch, pcie_switch, cpu, nic (each on a host) and switch
// (network switches: on the fabric, host = -1).
//
// Links are full duplex and carry, per direction:
//   line_rate = bandwidth × count          (count: bonded lanes, NV2 = 2)
//   capacity  = line_rate × efficiency     (achieved / line rate; calibration
//                                           sets it, presets take NCCL's model)
//   latency   paid once per hop by a transfer.
// Link kinds: nvlink, pcie (generation, width), smp (the CPU socket
// interconnect, QPI/UPI/xGMI), network.
// Each link l yields two directed links: 2l (a→b) and 2l+1 (b→a); the
// simulator accounts bytes per directed link.
//
// Routing (route()) is deterministic and cached; see routing.cpp:
//   - GPU→GPU over NVLink (through NVSwitches, never through another GPU)
//     whenever an NVLink path exists;
//   - else inside a host over PCIe and the CPUs;
//   - else GPU→PCIe→NIC→fabric→NIC→PCIe→GPU, through the NIC assigned to
//     each GPU (nic_of: the nearest NIC over PCIe; among equally near NICs
//     the one serving fewest GPUs so far, then the lowest index; GPU k of a
//     DGX gets NIC k; NICs with no network link are passed over).
//   Each segment is a shortest path by latency, ties broken by the larger
//   bottleneck capacity (both exact); remaining ties are settled as the
//   search meets them, by hop count and then by a fixed hash of (segment
//   source, segment destination, predecessor): equal-cost paths, such as
//   the spines of a fat tree, are spread over endpoint pairs as ECMP does,
//   and the same input always gives the same route.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "core/enum_names.h"
#include "core/units.h"

namespace meshsim::topology {

using NodeId = std::uint32_t;
using LinkId = std::uint32_t;
using DirLinkId = std::uint32_t;  // 2 × link + (1 if b→a)

/// Bounds every loader enforces on link parameters, so that sums of rates
/// and latencies stay far inside 64 bits: 100 Tb/s per lane (10x the
/// fastest real lane), at most 1024 lanes per link, 1 s per hop.
inline constexpr Bandwidth kMaxLaneRate = Bandwidth::Gbps(100'000);
inline constexpr int kMaxLanes = 1024;
inline constexpr Time kMaxHopLatency = Time::s(1);

enum class NodeKind : std::uint8_t { gpu, nvswitch, pcie_switch, cpu, nic, network_switch };
/// How the simulator spreads flows over equal-cost fabric paths
/// (sim/router.h): "ecmp" (a fixed hash per endpoint pair, the default),
/// "adaptive" (each new flow takes the least-loaded equal-cost path) or
/// "deterministic" (InfiniBand's subnet manager: one spine per destination).
enum class RoutingPolicy : std::uint8_t { ecmp, adaptive, deterministic };
enum class LinkKind : std::uint8_t { nvlink, pcie, smp, network };

/// JSON / CLI names: "gpu", "nvswitch", "pcie_switch", "cpu", "nic", "switch".
inline constexpr EnumNames<NodeKind, 6> kNodeKindNames{"node kind",
                                                       {{{NodeKind::gpu, "gpu"},
                                                         {NodeKind::nvswitch, "nvswitch"},
                                                         {NodeKind::pcie_switch, "pcie_switch"},
                                                         {NodeKind::cpu, "cpu"},
                                                         {NodeKind::nic, "nic"},
                                                         {NodeKind::network_switch, "switch"}}}};
inline constexpr EnumNames<RoutingPolicy, 3> kRoutingPolicyNames{
    "routing",
    {{{RoutingPolicy::ecmp, "ecmp"},
      {RoutingPolicy::adaptive, "adaptive"},
      {RoutingPolicy::deterministic, "deterministic"}}}};
inline constexpr EnumNames<LinkKind, 4> kLinkKindNames{"link kind",
                                                       {{{LinkKind::nvlink, "nvlink"},
                                                         {LinkKind::pcie, "pcie"},
                                                         {LinkKind::smp, "smp"},
                                                         {LinkKind::network, "network"}}}};
[[nodiscard]] inline std::string_view to_string(NodeKind k) {
  return kNodeKindNames.name(k);
}
[[nodiscard]] inline std::optional<NodeKind> node_kind_from(std::string_view s) {
  return kNodeKindNames.parse(s);
}
[[nodiscard]] inline std::string_view to_string(RoutingPolicy p) {
  return kRoutingPolicyNames.name(p);
}
[[nodiscard]] inline std::optional<RoutingPolicy> routing_policy_from(std::string_view s) {
  return kRoutingPolicyNames.parse(s);
}
/// "nvlink", "pcie", "smp", "network".
[[nodiscard]] inline std::string_view to_string(LinkKind k) {
  return kLinkKindNames.name(k);
}
[[nodiscard]] inline std::optional<LinkKind> link_kind_from(std::string_view s) {
  return kLinkKindNames.parse(s);
}

struct Node {
  std::string name;  // unique, e.g. "h0/gpu3", "leaf2"
  NodeKind kind = NodeKind::gpu;
  int host = -1;      // index into Topology::hosts(); -1 for fabric nodes
  std::string model;  // GPU model (a name of the hardware catalogue, hardware/gpus.h), empty otherwise
};

struct Link {
  LinkKind kind = LinkKind::nvlink;
  NodeId a = 0;
  NodeId b = 0;
  Bandwidth bandwidth;  // per direction, per lane
  int count = 1;        // lanes bonded into this link
  Time latency;
  double efficiency = 1.0;  // in (0, 1]
  int pcie_gen = 0;         // pcie only: generation 1..6
  int pcie_width = 0;       // pcie only: lanes x1..x32

  [[nodiscard]] Bandwidth line_rate() const { return bandwidth * count; }
  [[nodiscard]] Bandwidth capacity() const { return line_rate().scaled(efficiency); }
};

struct Host {
  std::string name;    // "h0"
  std::string preset;  // host preset it was built from, empty if hand-written
};

/// One hop of a route: the directed link crossed, from → to.
struct Hop {
  DirLinkId dlink = 0;
  LinkId link = 0;
  NodeId from = 0;
  NodeId to = 0;
};

struct Route {
  NodeId src = 0;
  NodeId dst = 0;
  std::vector<Hop> hops;  // empty when src == dst
  Time latency;           // sum of hop latencies
  Bandwidth bottleneck;   // min hop capacity (effective); zero when src == dst

  /// The directed links crossed, in order.
  [[nodiscard]] std::vector<DirLinkId> links() const {
    std::vector<DirLinkId> out;
    out.reserve(hops.size());
    for (const Hop& h : hops) out.push_back(h.dlink);
    return out;
  }
};

class Topology {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                      boost::property<boost::edge_index_t, DirLinkId>>;

  Topology();
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  std::string name;
  std::string description;
  RoutingPolicy routing = RoutingPolicy::ecmp;
  /// Where a job runs on this cluster (topology/placement.h, e.g.
  /// "random:1"); empty: contiguous. Commands that run a job apply it.
  std::string placement;
  /// Collectives may reduce in the fabric's switches (NCCL's CollNet over
  /// the SHARP plugin, NCCL_COLLNET_ENABLE=1), where every switch is of a
  /// model that does (hardware/network_parts.h). Off by default, as in NCCL.
  bool sharp = false;
  /// What a GPU-hour costs here (dollars) and what each host and each
  /// switch draws (watts), when given instead of the catalogue's figures
  /// (topology/cost.h).
  struct CostFigures {
    std::optional<double> gpu_hour_usd;
    std::optional<double> host_watts;
    std::optional<double> switch_watts;
  };
  CostFigures costs;

  // Building. Names must be unique; links must join two distinct existing
  // nodes (InternalError otherwise: loaders validate with paths first).
  int add_host(Host h);
  NodeId add_node(Node n);
  LinkId add_link(const Link& l);
  /// Replaces a link's efficiency and latency (calibration); same bounds as
  /// add_link. Routes are recomputed on next use.
  void set_link_efficiency_latency(LinkId id, double efficiency, Time latency);
  /// Renumbers the hosts: host k becomes the one that was host order[k]
  /// (a permutation of 0..host_count()-1), its nodes going with it; names,
  /// links and routes are unchanged, gpus() follows the new order
  /// (topology/placement.h). InternalError for anything but a permutation.
  void reorder_hosts(const std::vector<int>& order);
  /// Puts the hosts back in the order they were added.
  void restore_host_order();

  [[nodiscard]] std::size_t node_count() const { return nodes_.size(); }
  [[nodiscard]] std::size_t link_count() const { return links_.size(); }
  [[nodiscard]] const Node& node(NodeId id) const { return nodes_.at(id); }
  [[nodiscard]] const Link& link(LinkId id) const { return links_.at(id); }
  /// Link::capacity(), computed once when the link was added (hot in routing).
  [[nodiscard]] Bandwidth capacity(LinkId id) const { return capacities_[id]; }
  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }
  [[nodiscard]] const std::vector<Link>& links() const { return links_; }
  [[nodiscard]] const std::vector<Host>& hosts() const { return hosts_; }
  [[nodiscard]] int host_count() const { return static_cast<int>(hosts_.size()); }
  [[nodiscard]] const Graph& graph() const { return graph_; }

  [[nodiscard]] std::optional<NodeId> find(std::string_view node_name) const;
  /// The node named `name`; UsageError naming it if there is none.
  [[nodiscard]] NodeId at(std::string_view node_name) const;

  /// All GPUs, host-major, each host's GPUs in the order they were added.
  [[nodiscard]] const std::vector<NodeId>& gpus() const { return gpus_; }
  /// The GPU models of its GPUs, each once, in the order they first appear.
  [[nodiscard]] std::vector<std::string> gpu_models() const;
  [[nodiscard]] const std::vector<NodeId>& host_gpus(int host) const;
  /// Position of a GPU among its host's GPUs (gpu3 → 3).
  [[nodiscard]] int gpu_index(NodeId gpu) const;
  /// NICs of a host, in the order they were added.
  [[nodiscard]] const std::vector<NodeId>& host_nics(int host) const;
  /// The NIC a GPU uses to leave its host (see the header comment);
  /// nullopt when its host has no NIC.
  [[nodiscard]] std::optional<NodeId> nic_of(NodeId gpu) const;

  /// Deterministic, cached route. Thread-safe once building is over.
  /// UsageError when dst cannot be reached from src.
  [[nodiscard]] const Route& route(NodeId src, NodeId dst) const;

  [[nodiscard]] static DirLinkId directed(LinkId l, bool reverse) { return 2 * l + (reverse ? 1U : 0U); }
  /// The node a directed link leaves from, and the node it reaches.
  [[nodiscard]] NodeId from(DirLinkId d) const {
    const Link& l = links_.at(link_of(d));
    return (d & 1U) != 0 ? l.b : l.a;
  }
  [[nodiscard]] NodeId to(DirLinkId d) const { return from(d ^ 1U); }
  [[nodiscard]] static LinkId link_of(DirLinkId d) { return d / 2; }

 private:
  struct Derived;  // NIC assignment and route cache, computed lazily
  Derived& derived() const;
  void invalidate();
  [[nodiscard]] Route compute_route(NodeId src, NodeId dst) const;
  [[nodiscard]] std::optional<Route> fabric_segment(NodeId nic_a, NodeId nic_b) const;

  std::vector<Host> hosts_;
  std::vector<int> added_as_;  // per host: its index when it was added (reorder_hosts moves it along)
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<Bandwidth> capacities_;
  std::unordered_map<std::string, NodeId> by_name_;
  std::vector<NodeId> gpus_;
  std::vector<std::vector<NodeId>> host_gpus_;
  std::vector<std::vector<NodeId>> host_nics_;
  std::vector<int> gpu_index_;  // per node; -1 for non-GPUs
  Graph graph_;
  mutable std::unique_ptr<Derived> derived_;
};

}  // namespace meshsim::topology
