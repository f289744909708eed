#include "topology/topology.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::topology {

int Topology::add_host(Host h) {
  added_as_.push_back(static_cast<int>(hosts_.size()));
  hosts_.push_back(std::move(h));
  host_gpus_.emplace_back();
  host_nics_.emplace_back();
  return static_cast<int>(hosts_.size()) - 1;
}

NodeId Topology::add_node(Node n) {
  MESHSIM_ASSERT(!by_name_.contains(n.name), fmt::format("duplicate node name '{}'", n.name));
  MESHSIM_ASSERT(n.host >= -1 && n.host < host_count(), fmt::format("node '{}' has no such host", n.name));
  MESHSIM_ASSERT(n.kind == NodeKind::network_switch || n.host >= 0,
                 fmt::format("node '{}' must belong to a host", n.name));
  const auto id = static_cast<NodeId>(nodes_.size());
  by_name_.emplace(n.name, id);
  gpu_index_.push_back(-1);
  if (n.kind == NodeKind::gpu) {
    auto& list = host_gpus_[static_cast<std::size_t>(n.host)];
    gpu_index_.back() = static_cast<int>(list.size());
    list.push_back(id);
    // gpus_ is host-major: appending is right unless a later host already has GPUs.
    if (gpus_.empty() || nodes_[gpus_.back()].host <= n.host) {
      gpus_.push_back(id);
    } else {
      gpus_.clear();
      for (const auto& hg : host_gpus_) gpus_.insert(gpus_.end(), hg.begin(), hg.end());
    }
  }
  if (n.kind == NodeKind::nic) host_nics_[static_cast<std::size_t>(n.host)].push_back(id);
  nodes_.push_back(std::move(n));
  boost::add_vertex(graph_);
  invalidate();
  return id;
}

LinkId Topology::add_link(const Link& l) {
  MESHSIM_ASSERT(l.a < nodes_.size() && l.b < nodes_.size() && l.a != l.b,
                 "a link joins two distinct existing nodes");
  MESHSIM_ASSERT(l.count >= 1 && l.bandwidth.bps() > 0 && l.efficiency > 0.0 && l.efficiency <= 1.0 &&
                     l.latency >= Time::zero(),
                 "link parameters are validated before add_link");
  const auto id = static_cast<LinkId>(links_.size());
  links_.push_back(l);
  capacities_.push_back(l.capacity());
  boost::add_edge(l.a, l.b, directed(id, false), graph_);
  boost::add_edge(l.b, l.a, directed(id, true), graph_);
  invalidate();
  return id;
}

void Topology::set_link_efficiency_latency(LinkId id, double efficiency, Time latency) {
  MESHSIM_ASSERT(id < links_.size(), "no such link");
  MESHSIM_ASSERT(
      efficiency > 0.0 && efficiency <= 1.0 && latency >= Time::zero() && latency <= kMaxHopLatency,
      "link parameters are validated before they are set");
  links_[id].efficiency = efficiency;
  links_[id].latency = latency;
  capacities_[id] = links_[id].capacity();
  invalidate();
}

void Topology::reorder_hosts(const std::vector<int>& order) {
  const auto n = hosts_.size();
  std::vector<int> new_index(n, -1);
  MESHSIM_ASSERT(order.size() == n, "a host order names every host");
  for (std::size_t k = 0; k < n; ++k) {
    const int h = order[k];
    MESHSIM_ASSERT(h >= 0 && static_cast<std::size_t>(h) < n && new_index[static_cast<std::size_t>(h)] < 0,
                   "a host order is a permutation");
    new_index[static_cast<std::size_t>(h)] = static_cast<int>(k);
  }
  std::vector<Host> hosts(n);
  std::vector<int> added_as(n);
  std::vector<std::vector<NodeId>> host_gpus(n), host_nics(n);
  for (std::size_t k = 0; k < n; ++k) {
    const auto from = static_cast<std::size_t>(order[k]);
    hosts[k] = std::move(hosts_[from]);
    added_as[k] = added_as_[from];
    host_gpus[k] = std::move(host_gpus_[from]);
    host_nics[k] = std::move(host_nics_[from]);
  }
  hosts_ = std::move(hosts);
  added_as_ = std::move(added_as);
  host_gpus_ = std::move(host_gpus);
  host_nics_ = std::move(host_nics);
  for (Node& node : nodes_)
    if (node.host >= 0) node.host = new_index[static_cast<std::size_t>(node.host)];
  gpus_.clear();
  for (const auto& hg : host_gpus_) gpus_.insert(gpus_.end(), hg.begin(), hg.end());
  invalidate();
}

void Topology::restore_host_order() {
  std::vector<int> order(hosts_.size());
  for (std::size_t k = 0; k < hosts_.size(); ++k)
    order[static_cast<std::size_t>(added_as_[k])] = static_cast<int>(k);
  if (!std::is_sorted(added_as_.begin(), added_as_.end())) reorder_hosts(order);
}

std::optional<NodeId> Topology::find(std::string_view node_name) const {
  auto it = by_name_.find(std::string(node_name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

NodeId Topology::at(std::string_view node_name) const {
  if (auto id = find(node_name)) return *id;
  std::string hint;
  if (!gpus_.empty())
    hint = fmt::format(" (devices are named like \"{}\"; `meshsim topo show --json` lists them)",
                       nodes_[gpus_.front()].name);
  throw UsageError(fmt::format("no device named \"{}\" in topology \"{}\"{}", node_name, name, hint));
}

const std::vector<NodeId>& Topology::host_gpus(int host) const {
  MESHSIM_ASSERT(host >= 0 && host < host_count(), "host index out of range");
  return host_gpus_[static_cast<std::size_t>(host)];
}

std::vector<std::string> Topology::gpu_models() const {
  std::vector<std::string> out;
  for (NodeId g : gpus_)
    if (std::find(out.begin(), out.end(), node(g).model) == out.end()) out.push_back(node(g).model);
  return out;
}

int Topology::gpu_index(NodeId gpu) const {
  MESHSIM_ASSERT(gpu < nodes_.size() && nodes_[gpu].kind == NodeKind::gpu, "gpu_index of a non-GPU");
  return gpu_index_[gpu];
}

const std::vector<NodeId>& Topology::host_nics(int host) const {
  MESHSIM_ASSERT(host >= 0 && host < host_count(), "host index out of range");
  return host_nics_[static_cast<std::size_t>(host)];
}

}  // namespace meshsim::topology
