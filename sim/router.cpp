#include "sim/router.h"

#include <algorithm>
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
  if (policy_ == topology::RoutingPolicy::ecmp) return;
  if (policy_ == topology::RoutingPolicy::adaptive) load_.assign(2 * topo.link_count(), 0);
  up_.resize(topo.node_count());
  if (policy_ == topology::RoutingPolicy::deterministic) {
    destination_.assign(topo.node_count(), 0);
    std::vector<bool> on_fabric(topo.node_count(), false);
    for (const auto& l : topo.links())
      if (l.kind == topology::LinkKind::network) on_fabric[l.a] = on_fabric[l.b] = true;
    std::uint32_t next = 0;
    for (NodeId n = 0; n < topo.node_count(); ++n)
      if (topo.node(n).kind == topology::NodeKind::nic && on_fabric[n]) destination_[n] = next++;
  }
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
  if (policy_ == topology::RoutingPolicy::deterministic) by_destination(p);
  return p;
}

void Router::release(const std::vector<DirLinkId>& path) {
  if (policy_ != topology::RoutingPolicy::adaptive) return;
  for (DirLinkId l : path)
    if (load_[l] > 0) --load_[l];
}

std::vector<Router::Turn> Router::equal_turns(DirLinkId first, DirLinkId second) const {
  const NodeId u = topo_.from(first);
  const NodeId s = topo_.to(first);
  const NodeId v = topo_.to(second);
  const auto link = [&](DirLinkId d) -> const topology::Link& {
    return topo_.link(topology::Topology::link_of(d));
  };
  const auto width = [&](DirLinkId d) { return topo_.capacity(topology::Topology::link_of(d)); };
  const auto latency = link(first).latency + link(second).latency;
  const auto capacity = std::min(width(first), width(second));
  std::vector<Turn> out{{s, first, second}};
  for (const auto& [mid, in] : up_[u]) {
    if (mid == s || mid == v) continue;
    const auto it = between_.find(key(mid, v));
    if (it == between_.end()) continue;
    if (link(in).latency + link(it->second).latency != latency) continue;
    if (std::min(width(in), width(it->second)) < capacity) continue;
    out.push_back({mid, in, it->second});
  }
  return out;
}

// True at a turn u → s → v of three network switches.
bool Router::is_turn(DirLinkId first, DirLinkId second) const {
  return topo_.to(first) == topo_.from(second) && is_switch(topo_.from(first)) &&
         is_switch(topo_.to(first)) && is_switch(topo_.to(second));
}

// At every turn between switches, move to the middle switch whose links
// are least loaded among the equal-cost ones (ties: the hashed route's).
void Router::rebalance(std::vector<DirLinkId>& p) const {
  for (std::size_t k = 0; k + 1 < p.size(); ++k) {
    if (!is_turn(p[k], p[k + 1])) continue;
    std::uint64_t best_load = std::uint64_t{load_[p[k]]} + load_[p[k + 1]];
    for (const Turn& t : equal_turns(p[k], p[k + 1])) {
      const std::uint64_t load = std::uint64_t{load_[t.in]} + load_[t.out];
      if (load < best_load) {
        best_load = load;
        p[k] = t.in;
        p[k + 1] = t.out;
      }
    }
  }
}

// At every turn between switches, an equal-cost middle switch chosen by
// destination NIC number d (the last NIC on the path): one digit of d per
// level of the tree. A two-level route has one turn: the (d mod k)-th of
// its k. A three-level one turns up at a pod spine, over at a core and
// down at a pod spine: digit 0 (d mod k0) for both pod spines, so that the
// destinations under one leaf take the spines of each pod in turn, and
// digit 1, ((d / k0) mod k1), for the core, which thus does not follow
// from the pod spine: every pod spine's uplinks are used. In general turn
// i of n takes digit min(i, n - 1 - i), in the base of the first turns'
// counts of choices.
void Router::by_destination(std::vector<DirLinkId>& p) const {
  std::uint32_t d = 0;
  for (DirLinkId l : p)
    if (topo_.node(topo_.to(l)).kind == topology::NodeKind::nic) d = destination_[topo_.to(l)];
  std::vector<std::size_t> at;  // where the turns are
  for (std::size_t k = 0; k + 1 < p.size(); ++k)
    if (is_turn(p[k], p[k + 1])) at.push_back(k);
  std::vector<std::uint32_t> place;  // per digit, d's divisor for it (the down turns reuse the up turns')
  std::uint32_t divisor = 1;
  for (std::size_t i = 0; i < at.size(); ++i) {
    const std::size_t k = at[i];
    std::vector<Turn> turns = equal_turns(p[k], p[k + 1]);
    std::sort(turns.begin(), turns.end(), [](const Turn& a, const Turn& b) { return a.mid < b.mid; });
    const std::size_t digit = std::min(i, at.size() - 1 - i);
    if (digit == place.size()) {
      place.push_back(divisor);
      divisor *= static_cast<std::uint32_t>(turns.size());
    }
    const Turn& t = turns[(d / place[digit]) % turns.size()];
    p[k] = t.in;
    p[k + 1] = t.out;
  }
}

}  // namespace meshsim::sim
