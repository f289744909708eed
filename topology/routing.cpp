// Deterministic routing over the topology graph (see topology.h).

#include <algorithm>
#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "topology/routing_detail.h"

namespace meshsim::topology {

namespace {

// Label of a partial path: compared lexicographically, smaller is better.
struct Label {
  Time latency = Time::max();
  Bandwidth bottleneck;  // larger is better
  std::uint32_t hops = 0;

  [[nodiscard]] bool better_than(const Label& o) const {
    if (latency != o.latency) return latency < o.latency;
    if (bottleneck != o.bottleneck) return bottleneck > o.bottleneck;
    return hops < o.hops;
  }
  [[nodiscard]] bool same_as(const Label& o) const {
    return latency == o.latency && bottleneck == o.bottleneck && hops == o.hops;
  }
};

// Rank of predecessor `u` among equal-cost ways into a node, for the search
// from src to dst: a fixed mix of the three ids (core/hash.h).
// Equal-cost paths (the spines of a fat tree) are thus spread over
// endpoint pairs as ECMP hashing does, yet every run picks the same one.
std::uint64_t tie_rank(NodeId src, NodeId dst, NodeId u) {
  return splitmix64((std::uint64_t{src} << 40) ^ (std::uint64_t{dst} << 20) ^ u);
}

// Dijkstra with lexicographic labels (latency, -bottleneck, hops). The label
// order is isotone under extension (adding a hop cannot reorder two labels
// the wrong way), so the first settled label of a node is optimal. Among
// equal labels the predecessor with the lowest tie_rank wins, which makes
// the result deterministic and spreads equal-cost paths.
//
// The arrays are per-thread scratch space sized to the largest topology
// seen and reset through the list of nodes a search touched, so a search
// costs O(nodes visited), not O(nodes in the topology): a route inside one
// host of a 4,096-host cluster does not sweep the whole cluster.

class Search {
 public:
  void run(const Topology& t, NodeId src, std::optional<NodeId> dst, const SegmentRules& rules,
           Bandwidth start = Bandwidth::bits_per_second(INT64_MAX)) {
    reset(t.node_count());
    const NodeId tie_dst = dst.value_or(src);
    touch(src);
    label_[src] = Label{Time::zero(), start, 0};
    using Entry = std::tuple<std::int64_t, std::int64_t, std::uint32_t, NodeId>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> pq;
    pq.emplace(0, -start.bps(), 0, src);
    const auto& g = t.graph();
    while (!pq.empty()) {
      const NodeId u = std::get<3>(pq.top());
      pq.pop();
      if (done_[u]) continue;
      done_[u] = true;
      if (dst && u == *dst) break;
      if (u != src && !rules.transit(t.node(u))) continue;  // endpoints only
      for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
        const DirLinkId dl = boost::get(boost::edge_index, g, *e);
        const LinkId lid = Topology::link_of(dl);
        const Link& link = t.link(lid);
        if (!rules.use_link(link)) continue;
        const auto v = static_cast<NodeId>(boost::target(*e, g));
        // Towards one destination, a node that cannot forward is a dead end
        // unless it is that destination (the NICs under every leaf of a fat
        // tree would otherwise fill the queue).
        if (dst && v != *dst && !rules.transit(t.node(v))) continue;
        touch(v);
        if (done_[v]) continue;
        const Label cand{label_[u].latency + link.latency, std::min(label_[u].bottleneck, t.capacity(lid)),
                         label_[u].hops + 1};
        if (cand.better_than(label_[v])) {
          label_[v] = cand;
          via_[v] = dl;
          pq.emplace(cand.latency.count_ps(), -cand.bottleneck.bps(), cand.hops, v);
        } else if (cand.same_as(label_[v]) &&
                   tie_rank(src, tie_dst, u) < tie_rank(src, tie_dst, t.from(via_[v]))) {
          via_[v] = dl;  // equal cost: the label (and its queue entry) stay valid
        }
      }
    }
  }
  [[nodiscard]] bool reached(NodeId v) const { return done_[v]; }
  [[nodiscard]] const Label& label(NodeId v) const { return label_[v]; }
  [[nodiscard]] DirLinkId via(NodeId v) const { return via_[v]; }
  [[nodiscard]] const std::vector<NodeId>& touched() const { return touched_; }

 private:
  void reset(std::size_t n) {
    for (NodeId v : touched_) {
      label_[v] = Label{};
      done_[v] = false;
      seen_[v] = false;
    }
    touched_.clear();
    if (label_.size() < n) {
      label_.resize(n);
      via_.resize(n, 0);
      done_.resize(n, false);
      seen_.resize(n, false);
    }
  }
  void touch(NodeId v) {
    if (!seen_[v]) {
      seen_[v] = true;
      touched_.push_back(v);
    }
  }
  std::vector<Label> label_;
  std::vector<DirLinkId> via_;  // directed link used to reach the node
  std::vector<bool> done_;
  std::vector<bool> seen_;
  std::vector<NodeId> touched_;
};

Search& scratch() {
  thread_local Search s;
  return s;
}

const SegmentRules& nvlink_rules() {
  static const SegmentRules r{[](const Link& l) { return l.kind == LinkKind::nvlink; },
                              [](const Node& n) { return n.kind == NodeKind::nvswitch; }};
  return r;
}

// Inside a host: PCIe and the CPU socket link, through PCIe switches and CPUs.
const SegmentRules& host_rules() {
  static const SegmentRules r{
      [](const Link& l) { return l.kind == LinkKind::pcie || l.kind == LinkKind::smp; },
      [](const Node& n) { return n.kind == NodeKind::pcie_switch || n.kind == NodeKind::cpu; }};
  return r;
}

const SegmentRules& fabric_rules() {
  static const SegmentRules r{[](const Link& l) { return l.kind == LinkKind::network; },
                              [](const Node& n) { return n.kind == NodeKind::network_switch; }};
  return r;
}

// Anything but a GPU may forward traffic (routes between non-GPU endpoints).
const SegmentRules& any_rules() {
  static const SegmentRules r{[](const Link&) { return true; },
                              [](const Node& n) { return n.kind != NodeKind::gpu; }};
  return r;
}

void append(Route& r, const Route& seg) {
  r.hops.insert(r.hops.end(), seg.hops.begin(), seg.hops.end());
  r.latency += seg.latency;
  r.bottleneck = r.hops.size() == seg.hops.size() ? seg.bottleneck : std::min(r.bottleneck, seg.bottleneck);
}

}  // namespace

const SegmentRules& network_rules() {
  return fabric_rules();
}

std::optional<Route> shortest_path(const Topology& t, NodeId src, NodeId dst, const SegmentRules& rules) {
  Route r;
  r.src = src;
  r.dst = dst;
  if (src == dst) return r;
  Search& s = scratch();
  s.run(t, src, dst, rules);
  if (!s.reached(dst)) return std::nullopt;
  for (NodeId v = dst; v != src;) {
    const DirLinkId dl = s.via(v);
    const NodeId from = t.from(dl);
    r.hops.push_back(Hop{dl, Topology::link_of(dl), from, v});
    v = from;
  }
  std::reverse(r.hops.begin(), r.hops.end());
  r.latency = s.label(dst).latency;
  r.bottleneck = s.label(dst).bottleneck;
  return r;
}

std::vector<std::pair<NodeId, Time>> latencies_from(const Topology& t, NodeId src,
                                                    const SegmentRules& rules) {
  Search& s = scratch();
  s.run(t, src, std::nullopt, rules);
  std::vector<std::pair<NodeId, Time>> out;
  for (NodeId v : s.touched())
    if (s.reached(v)) out.emplace_back(v, s.label(v).latency);
  return out;
}

std::vector<NodeId> assign_nics(const Topology& t) {
  std::vector<NodeId> nic_of(t.node_count(), kNoNode);
  std::vector<bool> has_network_link(t.node_count(), false);
  for (const Link& l : t.links())
    if (l.kind == LinkKind::network) has_network_link[l.a] = has_network_link[l.b] = true;
  for (int h = 0; h < t.host_count(); ++h) {
    // NICs joined to the fabric; a host whose NICs are all unconnected
    // keeps them all (its inter-host routes fail with a clear message).
    std::vector<NodeId> nics;
    for (NodeId n : t.host_nics(h))
      if (has_network_link[n]) nics.push_back(n);
    if (nics.empty()) nics = t.host_nics(h);
    if (nics.empty()) continue;
    std::vector<int> load(nics.size(), 0);
    for (NodeId gpu : t.host_gpus(h)) {
      std::vector<Time> lat(nics.size(), Time::max());
      for (const auto& [v, l] : latencies_from(t, gpu, host_rules()))
        if (auto it = std::find(nics.begin(), nics.end(), v); it != nics.end())
          lat[static_cast<std::size_t>(it - nics.begin())] = l;
      std::size_t best = nics.size();
      for (std::size_t k = 0; k < nics.size(); ++k) {
        if (lat[k] == Time::max()) continue;
        if (best == nics.size() || lat[k] < lat[best] || (lat[k] == lat[best] && load[k] < load[best]))
          best = k;
      }
      if (best == nics.size()) continue;  // no PCIe path to any NIC
      nic_of[gpu] = nics[best];
      ++load[best];
    }
  }
  return nic_of;
}

namespace {

// The one fabric link of a NIC, or nullopt when it has none or several.
std::optional<DirLinkId> only_uplink(const Topology& t, NodeId nic) {
  std::optional<DirLinkId> out;
  const auto& g = t.graph();
  for (auto [e, end] = boost::out_edges(nic, g); e != end; ++e) {
    const DirLinkId dl = boost::get(boost::edge_index, g, *e);
    if (t.link(Topology::link_of(dl)).kind != LinkKind::network) continue;
    if (out) return std::nullopt;
    out = dl;
  }
  return out;
}

// One full search from switch `from` (its label's bottleneck `start`), kept
// with every equal-cost predecessor of each switch it reaches.
std::shared_ptr<const FabricDag> build_dag(const Topology& t, NodeId from, Bandwidth start) {
  Search& s = scratch();
  s.run(t, from, std::nullopt, fabric_rules(), start);
  auto dag = std::make_shared<FabricDag>();
  const auto& g = t.graph();
  for (NodeId v : s.touched()) {
    if (!s.reached(v) || t.node(v).kind != NodeKind::network_switch) continue;
    const Label& lv = s.label(v);
    FabricDag::Entry e{lv.latency, lv.bottleneck, lv.hops, {}};
    for (auto [it, end] = boost::out_edges(v, g); it != end; ++it) {
      const DirLinkId in = boost::get(boost::edge_index, g, *it) ^ 1U;  // u -> v
      const auto u = static_cast<NodeId>(boost::target(*it, g));
      const LinkId lid = Topology::link_of(in);
      if (!s.reached(u) || (u != from && t.node(u).kind != NodeKind::network_switch)) continue;
      if (t.link(lid).kind != LinkKind::network) continue;
      const Label& lu = s.label(u);
      const Label cand{lu.latency + t.link(lid).latency, std::min(lu.bottleneck, t.capacity(lid)),
                       lu.hops + 1};
      if (cand.same_as(lv)) e.preds.push_back(in);
    }
    dag->at.emplace(v, std::move(e));
  }
  return dag;
}

}  // namespace

// NIC to NIC across the fabric. When each NIC hangs off one switch, the
// switch-to-switch part comes from a search per first switch, cached, with
// the equal-cost choice made per NIC pair exactly as shortest_path's ties
// are (the lowest tie_rank of (source NIC, destination NIC, predecessor)):
// a cluster of thousands of NICs then needs one search per leaf, not one
// per pair.
std::optional<Route> Topology::fabric_segment(NodeId nic_a, NodeId nic_b) const {
  const auto up = only_uplink(*this, nic_a);
  const auto down = only_uplink(*this, nic_b);
  if (!up || !down || nic_a == nic_b) return shortest_path(*this, nic_a, nic_b, fabric_rules());
  const NodeId la = to(*up);
  const NodeId lb = to(*down);
  const Bandwidth start = capacity(link_of(*up));
  std::shared_ptr<const FabricDag> dag;
  {
    Derived& d = derived();
    std::lock_guard lock(d.mutex);
    auto& slot = d.dags[{la, start.bps()}];
    if (!slot) slot = build_dag(*this, la, start);
    dag = slot;
  }
  const auto it = dag->at.find(lb);
  if (it == dag->at.end()) return std::nullopt;
  Route r;
  r.src = nic_a;
  r.dst = nic_b;
  std::vector<DirLinkId> back{*down ^ 1U};  // lb -> nic_b
  for (NodeId v = lb; v != la;) {
    const auto& preds = dag->at.at(v).preds;
    DirLinkId best = preds.front();
    for (DirLinkId p : preds)
      if (tie_rank(nic_a, nic_b, from(p)) < tie_rank(nic_a, nic_b, from(best))) best = p;
    back.push_back(best);
    v = from(best);
  }
  back.push_back(*up);
  std::reverse(back.begin(), back.end());
  for (DirLinkId dl : back) {
    const LinkId l = link_of(dl);
    r.hops.push_back(Hop{dl, l, from(dl), to(dl)});
    r.latency += link(l).latency;
    r.bottleneck = r.hops.size() == 1 ? capacity(l) : std::min(r.bottleneck, capacity(l));
  }
  return r;
}

Route Topology::compute_route(NodeId src, NodeId dst) const {
  const Node& a = node(src);
  const Node& b = node(dst);
  auto unreachable = [&](const std::string& why) -> UsageError {
    return UsageError(fmt::format("no route from {} to {}: {}", a.name, b.name, why));
  };
  if (a.kind == NodeKind::gpu && b.kind == NodeKind::gpu && src != dst) {
    if (auto r = shortest_path(*this, src, dst, nvlink_rules())) return *r;
    if (a.host == b.host) {
      if (auto r = shortest_path(*this, src, dst, host_rules())) return *r;
      throw unreachable("no NVLink or PCIe path inside the host");
    }
    const auto nic_a = nic_of(src);
    const auto nic_b = nic_of(dst);
    if (!nic_a) throw unreachable(fmt::format("{} has no NIC reachable over PCIe", a.name));
    if (!nic_b) throw unreachable(fmt::format("{} has no NIC reachable over PCIe", b.name));
    Route r;
    r.src = src;
    r.dst = dst;
    append(r, *shortest_path(*this, src, *nic_a, host_rules()));
    auto mid = fabric_segment(*nic_a, *nic_b);
    if (!mid)
      throw unreachable(
          fmt::format("the fabric joins no path from {} to {}", node(*nic_a).name, node(*nic_b).name));
    append(r, *mid);
    append(r, *shortest_path(*this, *nic_b, dst, host_rules()));
    return r;
  }
  if (auto r = shortest_path(*this, src, dst, any_rules())) return *r;
  throw unreachable("the nodes are not connected");
}

// The lazily computed parts (routing_detail.h): made with the topology,
// dropped when it changes, filled on first use.
Topology::Topology() : derived_(std::make_unique<Derived>()) {}
Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

void Topology::invalidate() {
  derived_ = std::make_unique<Derived>();
}

Topology::Derived& Topology::derived() const {
  MESHSIM_ASSERT(derived_ != nullptr, "use of a moved-from Topology");
  Derived& d = *derived_;
  std::call_once(d.nics_once, [&] { d.nic_of = assign_nics(*this); });
  return d;
}

std::optional<NodeId> Topology::nic_of(NodeId gpu) const {
  MESHSIM_ASSERT(gpu < nodes_.size() && nodes_[gpu].kind == NodeKind::gpu, "nic_of a non-GPU");
  const auto& m = derived().nic_of;
  if (m[gpu] == kNoNode) return std::nullopt;
  return m[gpu];
}

const Route& Topology::route(NodeId src, NodeId dst) const {
  MESHSIM_ASSERT(src < nodes_.size() && dst < nodes_.size(), "route endpoints exist");
  Derived& d = derived();
  const std::uint64_t key = (std::uint64_t{src} << 32) | dst;
  {
    std::lock_guard lock(d.mutex);
    if (auto it = d.routes.find(key); it != d.routes.end()) return it->second;
  }
  Route r = compute_route(src, dst);  // outside the lock: routes are independent
  std::lock_guard lock(d.mutex);
  return d.routes.try_emplace(key, std::move(r)).first->second;
}

}  // namespace meshsim::topology
