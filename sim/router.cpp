#include "sim/router.h"

#include <limits>

namespace meshsim::sim {

using topology::DirLinkId;
using topology::NodeId;

namespace {

std::uint64_t key(NodeId a, NodeId b) {
  return (std::uint64_t{a} << 32) | b;
}

}  // namespace

Router::Router(const topology::Topology& topo, topology::RoutingPolicy policy)
    : topo_(topo), policy_(policy) {
  if (policy_ != topology::RoutingPolicy::adaptive) return;
  load_.assign(2 * topo.link_count(), 0);
  up_.resize(topo.node_count());
  for (topology::LinkId l = 0; l < topo.link_count(); ++l) {
    const auto& link = topo.link(l);
    if (!is_switch(link.a) || !is_switch(link.b)) continue;
    const DirLinkId ab = topology::Topology::directed(l, false);
    const DirLinkId ba = topology::Topology::directed(l, true);
    up_[link.a].emplace_back(link.b, ab);
    up_[link.b].emplace_back(link.a, ba);
    // Parallel links between two switches: the first one stands for both.
    between_.emplace(key(link.a, link.b), ab);
    between_.emplace(key(link.b, link.a), ba);
  }
}

bool Router::is_switch(NodeId n) const {
  return topo_.node(n).kind == topology::NodeKind::network_switch;
}

std::vector<DirLinkId> Router::path(NodeId a, NodeId b) {
  std::vector<DirLinkId> p = topo_.route(a, b).links();
  if (policy_ == topology::RoutingPolicy::adaptive) {
    rebalance(p);
    for (DirLinkId l : p) ++load_[l];
  }
  return p;
}

void Router::release(const std::vector<DirLinkId>& path) {
  if (policy_ != topology::RoutingPolicy::adaptive) return;
  for (DirLinkId l : path)
    if (load_[l] > 0) --load_[l];
}

// At every turn u → s → v between switches, move to the middle switch s'
// whose links u → s' and s' → v are least loaded among those with the same
// latency and at least the capacity of the hashed choice.
void Router::rebalance(std::vector<DirLinkId>& p) const {
  auto ends = [&](DirLinkId d) { return std::pair{topo_.from(d), topo_.to(d)}; };
  for (std::size_t k = 0; k + 1 < p.size(); ++k) {
    const auto [u, s] = ends(p[k]);
    const auto [s2, v] = ends(p[k + 1]);
    if (s != s2 || !is_switch(u) || !is_switch(s) || !is_switch(v)) continue;
    const auto& first = topo_.link(topology::Topology::link_of(p[k]));
    const auto& second = topo_.link(topology::Topology::link_of(p[k + 1]));
    const auto latency = first.latency + second.latency;
    const auto capacity = std::min(topo_.capacity(topology::Topology::link_of(p[k])),
                                   topo_.capacity(topology::Topology::link_of(p[k + 1])));
    std::uint64_t best_load = std::uint64_t{load_[p[k]]} + load_[p[k + 1]];
    for (const auto& [mid, out] : up_[u]) {
      if (mid == s || mid == v) continue;
      const auto it = between_.find(key(mid, v));
      if (it == between_.end()) continue;
      const auto& l1 = topo_.link(topology::Topology::link_of(out));
      const auto& l2 = topo_.link(topology::Topology::link_of(it->second));
      if (l1.latency + l2.latency != latency) continue;
      if (std::min(topo_.capacity(topology::Topology::link_of(out)),
                   topo_.capacity(topology::Topology::link_of(it->second))) < capacity)
        continue;
      const std::uint64_t load = std::uint64_t{load_[out]} + load_[it->second];
      if (load < best_load) {
        best_load = load;
        p[k] = out;
        p[k + 1] = it->second;
      }
    }
  }
}

}  // namespace meshsim::sim
