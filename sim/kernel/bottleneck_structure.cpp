// Flows in and out of the bottleneck structure, batches and what they
// changed, and the checks (sim/kernel/bottleneck_structure.h).
#include "sim/kernel/bottleneck_structure.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/kernel/numeric.h"
#include "sim/kernel/slots.h"

namespace meshsim::sim::kernel {

BottleneckStructure::BottleneckStructure(const std::vector<double>& capacity)
    : network_links_(capacity.size()), links_(capacity.size()), lists_(capacity.size()) {
  for (std::size_t l = 0; l < capacity.size(); ++l) {
    MESHSIM_ASSERT(capacity[l] > 0 && std::isfinite(capacity[l]), "link capacities are positive");
    links_[l].capacity = capacity[l];
  }
  mark_.assign(links_.size(), 0);
  mark_weight_.assign(links_.size(), 0.0);
  occupant_.assign(links_.size(), kFree);
  capacity_ = capacity;
}

void BottleneckStructure::keep_all_links() {
  MESHSIM_ASSERT(active_ == 0, "links are all kept from before the first flow");
  keep_all_ = true;
  alone_ok_ = false;
}

void BottleneckStructure::no_flows_alone() {
  MESHSIM_ASSERT(active_ == 0, "flows start alone or not from before the first flow");
  alone_ok_ = false;
}

BottleneckStructure::FlowIndex BottleneckStructure::add(std::span<const LinkIndex> links,
                                                        std::span<const double> weights, double cap) {
  MESHSIM_ASSERT(weights.empty() || weights.size() == links.size(), "one weight per link");
  MESHSIM_ASSERT(!links.empty() || cap > 0, "a flow crosses a link or has a cap");
  MESHSIM_ASSERT(cap >= 0 && std::isfinite(cap), "a flow's cap is finite and not negative");
  open_batch();
  const FlowIndex f = take_slot(flows_, free_flows_, kNone - 1, "too many flows");
  const auto n = static_cast<std::uint32_t>(links.size());
  const std::uint32_t len = n + (cap > 0 ? 1 : 0);
  const std::uint32_t off = paths_.alloc(len);
  flows_[f] = Flow{off, len, n, 0, 0, 0, true};
  for (std::uint32_t h = 0; h < n; ++h) {
    MESHSIM_ASSERT(links[h] < network_links_, "a flow's link exists");
    const double w = weights.empty() ? 1.0 : weights[h];
    MESHSIM_ASSERT(w > 0 && std::isfinite(w), "link weights are positive");
    paths_.link[off + h] = links[h];
    paths_.weight[off + h] = w;
    paths_.edge[off + h] = PathPool::kNoEdge;
  }
  if (cap > 0) {
    // (new_cap_link may grow links_; the path entry is written after.)
    const LinkIndex c = new_cap_link(cap);
    paths_.link[off + n] = c;
    paths_.weight[off + n] = 1.0;
    paths_.edge[off + n] = PathPool::kNoEdge;
  }
  ++active_;
  ++added_;
  if (start_alone(f)) return f;
  for (std::uint32_t h = 0; h < n; ++h)
    if (const std::uint32_t o = occupant_[links[h]]; o < kListed) bring_in(o);
  enter_links(f);
  note_move(f, kNone);
  limit(f, first_bottleneck(f));
  for (std::uint32_t h = 0; h < len; ++h) {
    if (!hop_kept(f, h)) continue;
    if (h != flows_[f].bneck) join_edge(f, h);
    queue(link_at(f, h));
  }
  return f;
}

// A link of its own for a capped flow: capacity `cap`, weight 1.
BottleneckStructure::LinkIndex BottleneckStructure::new_cap_link(double cap) {
  const LinkIndex c = take_slot(links_, free_cap_links_, kNone - 1, "too many capped flows");
  lists_.resize(links_.size());
  mark_.resize(links_.size(), 0);
  mark_weight_.resize(links_.size(), 0.0);
  MESHSIM_ASSERT(lists_[c].in.empty() && lists_[c].out.empty() && links_[c].limited == 0,
                 "a free cap link is empty");
  links_[c] = Link{};
  links_[c].capacity = cap;
  lists_[c].reserve = 0;
  lists_[c].allow = kInf;
  return c;
}

// The hop where a new flow starts limited: the lowest level it would give
// its link, (C − F) / (W + w), among its kept links.
std::uint32_t BottleneckStructure::first_bottleneck(FlowIndex f) const {
  std::uint32_t best = kNone;
  double lowest = kInf;
  for (std::uint32_t h = 0; h < flows_[f].len; ++h) {
    if (!hop_kept(f, h)) continue;
    const Link& L = links_[link_at(f, h)];
    const double level = (L.capacity - L.fixed) / (L.wsum + weight_at(f, h));
    if (best == kNone || level < lowest) {
      best = h;
      lowest = level;
    }
  }
  MESHSIM_ASSERT(best != kNone, "a flow crosses a kept link");
  return best;
}

// Flow f becomes limited at its hop `hop`. A link that limited no flow
// had level +∞; it now has the level (1) gives (or keeps the one a
// water-filling just set).
void BottleneckStructure::limit(FlowIndex f, std::uint32_t hop) {
  flows_[f].bneck = hop;
  const LinkIndex l = link_at(f, hop);
  if (links_[l].limited == 0) activate(l);
  Link& L = links_[l];
  L.wsum += weight_at(f, hop);
  ++L.limited;
  touch(l);
  if (L.level == kInf) {
    note_level(l);
    L.level = std::max(0.0, (L.capacity - L.fixed) / L.wsum);
  }
}

// Flow f stops being limited at its bottleneck; a link left limiting no
// flow goes back to level +∞ (its out-edges are gone with their members)
// and becomes passive.
void BottleneckStructure::unlimit(FlowIndex f) {
  const LinkIndex l = bottleneck(f);
  Link& L = links_[l];
  L.wsum -= weight_at(f, flows_[f].bneck);
  --L.limited;
  touch(l);
  if (L.limited > 0) return;
  release(l);
  MESHSIM_ASSERT(lists_[l].out.empty() && lists_[l].passive.empty(),
                 "a link that limits no flow has no out-edges");
  L.wsum = 0;
  note_level(l);
  L.level = kInf;
  L.alarm = kInf;
  deactivate(l);
}

void BottleneckStructure::remove(FlowIndex f) {
  Flow& fl = flows_[f];
  MESHSIM_ASSERT(fl.active, "removing a flow that is not active");
  open_batch();
  if (fl.alone) {
    end_alone(f);
  } else {
    const double rate = links_[bottleneck(f)].level;
    for (std::uint32_t h = 0; h < fl.len; ++h) {
      if (h == fl.bneck || paths_.edge[fl.off + h] == PathPool::kNoEdge) continue;
      leave_edge(f, h, rate);
      queue(link_at(f, h));
    }
    const LinkIndex b = bottleneck(f);
    unlimit(f);
    queue(b);
    leave_links(f);
  }
  if (fl.len > fl.links) {
    const LinkIndex c = paths_.link[fl.off + fl.links];
    MESHSIM_ASSERT(links_[c].limited == 0 && lists_[c].in.empty(), "a cap link is left empty");
    free_cap_links_.push_back(c);
  }
  if (fl.noted == batch_) noted_moves_[fl.move_slot].flow = kNone;  // not a move: it is gone
  fl.noted = 0;
  fl.active = false;
  paths_.release(fl.off, fl.len);
  free_flows_.push_back(f);
  --active_;
}

void BottleneckStructure::open_batch() {
  if (batch_open_) return;
  batch_open_ = true;
  ++batch_;
  if (stamp() == 0) {
    // The links' 32-bit stamps wrap: none may match a later batch.
    for (Link& L : links_) L.noted = L.waited = 0;
    ++batch_;
  }
  batch_repairs_ = 0;
  batch_waiting_ = 0;
  noted_levels_.clear();
  noted_moves_.clear();
  noted_links_.clear();
}

void BottleneckStructure::note_move(FlowIndex f, LinkIndex before) {
  Flow& fl = flows_[f];
  if (fl.noted == batch_) return;
  fl.noted = batch_;
  fl.move_slot = static_cast<std::uint32_t>(noted_moves_.size());
  noted_moves_.push_back({f, before});
}

void BottleneckStructure::touch_kept(LinkIndex l) {
  if (l >= network_links_ || lists_[l].touched == batch_) return;
  lists_[l].touched = batch_;
  noted_links_.push_back(l);
}

void BottleneckStructure::solve() {
  open_batch();
  if ((added_ > 64 && added_ > active_ / 2) || !drain()) rebuild();
  close_batch();
  ++stats_.solves;
}

// What the batch changed, for the caller: levels that moved, flows whose
// bottleneck moved (new flows with kNone), network links touched.
void BottleneckStructure::close_batch() {
  level_changes_.clear();
  for (const LevelChange& c : noted_levels_)
    if (!(links_[c.link].level == c.before)) level_changes_.push_back(c);
  moves_.clear();
  for (const Move& m : noted_moves_)
    if (m.flow != kNone && bottleneck(m.flow) != m.before) moves_.push_back(m);
  touched_links_.swap(noted_links_);
  stats_.level_changes += level_changes_.size();
  added_ = 0;
  batch_open_ = false;
}

double BottleneckStructure::load(LinkIndex l) const {
  if (l < network_links_ && occupant_[l] < kListed) {
    const FlowIndex f = occupant_[l];
    std::uint32_t h = 0;
    while (link_at(f, h) != l) ++h;
    return weight_at(f, h) * rate(f);
  }
  const Link& L = links_[l];
  double sum = 0;
  if (kept(l) && L.limited > 0) return L.wsum * L.level + L.fixed;
  if (kept(l)) {
    // A passive link's in-edges only bound their members' rates: the
    // members, its every flow (a cap link's too), are summed instead.
    for (const InEdge& in : lists_[l].in)
      for (const PathPool::Entry& m : edges_[in.edge].members) sum += weight_at(m.flow, m.hop) * rate(m.flow);
    return sum;
  }
  for (const PathPool::Entry& e : lists_[l].flows) sum += weight_at(e.flow, e.hop) * rate(e.flow);
  return sum;
}

BottleneckStructure::Snapshot BottleneckStructure::snapshot() const {
  Snapshot s;
  for (std::size_t l = 0; l < network_links_; ++l) s.problem.capacity.push_back(links_[l].capacity);
  for (FlowIndex f = 0; f < flows_.size(); ++f) {
    const Flow& fl = flows_[f];
    if (!fl.active) continue;
    const auto first = paths_.link.begin() + fl.off;
    const auto wfirst = paths_.weight.begin() + fl.off;
    const double cap = fl.len > fl.links ? links_[link_at(f, fl.links)].capacity : 0.0;
    s.problem.flows.push_back({{first, first + fl.links}, {wfirst, wfirst + fl.links}, cap});
    s.flows.push_back(f);
    s.rates.push_back(rate(f));
  }
  return s;
}

// Flow f's hop `hop` is a member of the right edge: none at its
// bottleneck or a link left out; at a link that limits flows, the edge
// from f's bottleneck; at a passive link, an edge from a kept hop of f
// that limits flows (so that its level bounds f's rate).
std::optional<std::string> BottleneckStructure::check_edge(FlowIndex f, std::uint32_t hop, double tol) const {
  const Flow& fl = flows_[f];
  const LinkIndex l = link_at(f, hop);
  const EdgeIndex e = paths_.edge[fl.off + hop];
  const bool wanted = !fl.alone && hop != fl.bneck && kept(l);
  if (e == PathPool::kNoEdge)
    return wanted ? std::optional(fmt::format("flow {} is in no edge at its link {}", f, l)) : std::nullopt;
  if (!wanted) return fmt::format("flow {} is in an edge at its link {}, which needs none", f, l);
  const Edge& E = edges_[e];
  if (E.head != l || E.passive != (!keep_all_ && links_[l].limited == 0))
    return fmt::format("flow {}'s edge at link {} is not that link's", f, l);
  if (lists_[l].in[E.in_slot].weight != out_of(e).weight)
    return fmt::format("the edge from {} to {} weighs {} at its tail, {} at its head", E.tail, l,
                       out_of(e).weight, lists_[l].in[E.in_slot].weight);
  if (!E.passive)
    return E.tail == bottleneck(f)
               ? std::nullopt
               : std::optional(fmt::format("flow {}'s edge at link {} starts at {}, not at its bottleneck", f,
                                           l, E.tail));
  bool on_path = false;
  for (std::uint32_t h = 0; h < fl.len; ++h) on_path = on_path || link_at(f, h) == E.tail;
  if (!on_path || !kept(E.tail) || links_[E.tail].limited == 0 || rate(f) > links_[E.tail].level * (1 + tol))
    return fmt::format("flow {}'s edge at passive link {} starts at {}, which does not bound its rate", f, l,
                       E.tail);
  return std::nullopt;
}

std::optional<std::string> BottleneckStructure::check(double tol) const {
  std::vector<double> w(links_.size(), 0.0), fx(links_.size(), 0.0), load(links_.size(), 0.0);
  for (FlowIndex f = 0; f < flows_.size(); ++f) {
    if (!flows_[f].active) continue;
    const double r = rate(f);
    for (std::uint32_t h = 0; h < flows_[f].len; ++h) {
      const LinkIndex l = link_at(f, h);
      (h == flows_[f].bneck ? w[l] : fx[l]) += weight_at(f, h) * (h == flows_[f].bneck ? 1.0 : r);
      load[l] += weight_at(f, h) * r;
      if (kept(l) && r > links_[l].level * (1 + tol))
        return fmt::format("flow {} runs at {}, above the level {} of its link {}", f, r, links_[l].level, l);
      if (auto bad = check_edge(f, h, tol)) return bad;
    }
  }
  for (LinkIndex l = 0; l < links_.size(); ++l) {
    const Link& L = links_[l];
    if (load[l] > L.capacity * (1 + tol))
      return fmt::format("link {} carries {}, over its capacity {}", l, load[l], L.capacity);
    if (!kept(l)) continue;
    if (L.limited > 0 && std::fabs(fx[l] - L.fixed) > tol * L.capacity)
      return fmt::format("link {} keeps F = {}, its flows say {}", l, L.fixed, fx[l]);
    if (w[l] > 0 && std::fabs(L.level * w[l] + fx[l] - L.capacity) > tol * L.capacity)
      return fmt::format("link {} limits flows at {} but is not full ({} of {})", l, L.level,
                         L.level * w[l] + fx[l], L.capacity);
    if (w[l] == 0 && L.level != kInf)
      return fmt::format("link {} limits no flow but has level {}", l, L.level);
    if (lists_[l].bounds.size() != lists_[l].passive.size())
      return fmt::format("link {} keeps {} bounds for {} passive out-edges", l, lists_[l].bounds.size(),
                         lists_[l].passive.size());
    for (std::size_t i = 0; i < lists_[l].passive.size(); ++i) {
      const PassiveEdge& p = lists_[l].passive[i];
      const double bound = lists_[l].bounds[i];
      if (!(bound == p.base + lists_[p.head].allow))
        return fmt::format("the passive edge from {} to {} keeps the bound {}, not base {} + allowance {}", l,
                           p.head, bound, p.base, lists_[p.head].allow);
    }
  }
  return std::nullopt;
}

}  // namespace meshsim::sim::kernel
