// The edges of the bottleneck structure and its repair, link by link
// (sim/kernel/bottleneck_structure.h).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "sim/kernel/bottleneck_structure.h"
#include "sim/kernel/numeric.h"
#include "sim/kernel/slots.h"

namespace meshsim::sim::kernel {

// Flow f's hop `hop` (kept, not its bottleneck) joins the edge from its
// bound there (tail_for) to that link: the link's F grows by w · λ_b (a
// passive link counts it at the edge's base and shares its allowance
// again).
void BottleneckStructure::join_edge(FlowIndex f, std::uint32_t hop) {
  const LinkIndex head = link_at(f, hop);
  const LinkIndex tail = tail_for(f, hop);
  const EdgeIndex e = edge(head, tail);
  add_member(f, hop, e);
  const double w = weight_at(f, hop);
  Link& H = links_[head];
  touch(head);
  if (edges_[e].passive) {
    const double base = passive_of(e).base;
    H.fixed += w * base;
    Lists& HL = lists_[head];
    HL.reserve -= w * (base + HL.allow);
    if (HL.reserve >= 0) {
      Link& T = links_[tail];
      T.alarm = std::min(T.alarm, base + HL.allow);
      return;
    }
    H.stale = true;
    queue(head);
    return;
  }
  const double level = links_[tail].level;
  H.fixed += w * level;
  H.max_in = std::max(H.max_in, level);
}

// Where the edge of flow f's hop `hop` starts: f's bottleneck when the
// head limits flows (its F must be exact), and for a passive head the hop
// of f nearest to `hop` that is kept and limits flows. Its level bounds
// f's rate by (3) as the bottleneck's does, and it stays put when f's
// bottleneck moves (see "Passive links").
BottleneckStructure::LinkIndex BottleneckStructure::tail_for(FlowIndex f, std::uint32_t hop) const {
  if (keep_all_ || links_[link_at(f, hop)].limited > 0) return bottleneck(f);
  const Flow& fl = flows_[f];
  const auto bounds = [&](std::uint32_t h) { return hop_kept(f, h) && links_[link_at(f, h)].limited > 0; };
  for (std::uint32_t d = 1; d < fl.len; ++d) {
    if (hop + d < fl.len && bounds(hop + d)) return link_at(f, hop + d);
    if (hop >= d && bounds(hop - d)) return link_at(f, hop - d);
  }
  return bottleneck(f);
}

// Flow f's hop `hop` moves from its edge to the edge from `tail`, with
// its weight; F, bases and reserves are left for the caller to count
// afresh.
void BottleneckStructure::rehome(FlowIndex f, std::uint32_t hop, LinkIndex tail) {
  ++stats_.rehomed;
  const EdgeIndex from = paths_.edge[flows_[f].off + hop];
  remove_member(f, hop);
  if (edges_[from].members.empty()) drop_edge(from);
  add_member(f, hop, edge(link_at(f, hop), tail));
}

// Each member of passive link l's in-edges that its edge's tail only
// bounds moves to the edge from its bottleneck, so that l's F, once
// counted afresh, is exact. False when every member was there already.
bool BottleneckStructure::tighten(LinkIndex l) {
  rehomed_.clear();
  for (const auto [e, tail, a] : lists_[l].in)
    for (const PathPool::Entry& m : edges_[e].members)
      if (bottleneck(m.flow) != tail) rehomed_.push_back(m);
  for (const PathPool::Entry& m : rehomed_) rehome(m.flow, m.hop, bottleneck(m.flow));
  return !rehomed_.empty();
}

// Link l limits no flow any more, so its level bounds nothing: the flows
// whose passive edges start at l leave them for edges from another bound.
void BottleneckStructure::release(LinkIndex l) {
  rehomed_.clear();
  for (const OutEdge& o : lists_[l].passive)
    for (const PathPool::Entry& m : edges_[o.edge].members) rehomed_.push_back(m);
  for (const PathPool::Entry& m : rehomed_) {
    leave_edge(m.flow, m.hop, 0.0);
    join_edge(m.flow, m.hop);
  }
}

// Flow f's hop `hop` becomes a member of edge e, which its weight joins;
// returns e's out-edge.
BottleneckStructure::OutEdge& BottleneckStructure::add_member(FlowIndex f, std::uint32_t hop, EdgeIndex e) {
  const std::uint32_t at = flows_[f].off + hop;
  PathPool::enlist(edges_[e].members, paths_.eslot, at, f, hop);
  paths_.edge[at] = e;
  return weigh(e, paths_.weight[at]);
}

// Flow f's hop `hop` stops being a member of its edge, which its weight
// leaves (the edge stays, even empty); returns the edge's out-edge.
BottleneckStructure::OutEdge& BottleneckStructure::remove_member(FlowIndex f, std::uint32_t hop) {
  const std::uint32_t at = flows_[f].off + hop;
  const EdgeIndex e = paths_.edge[at];
  PathPool::unlist(edges_[e].members, paths_.eslot, at, [&](FlowIndex g) { return flows_[g].off; });
  paths_.edge[at] = PathPool::kNoEdge;
  return weigh(e, -paths_.weight[at]);
}

// Edge e's weight A changes by w, in its out-edge and its in-edge.
BottleneckStructure::OutEdge& BottleneckStructure::weigh(EdgeIndex e, double w) {
  const Edge& E = edges_[e];
  lists_[E.head].in[E.in_slot].weight += w;
  OutEdge& o = out_of(e);
  o.weight += w;
  return o;
}

// Flow f's hop `hop` leaves its edge, where the flow ran at `rate`.
void BottleneckStructure::leave_edge(FlowIndex f, std::uint32_t hop, double rate) {
  const EdgeIndex e = paths_.edge[flows_[f].off + hop];
  const Edge& E = edges_[e];
  remove_member(f, hop);
  const double w = weight_at(f, hop);
  Link& H = links_[E.head];
  if (E.passive) {
    const double base = passive_of(e).base;
    H.fixed -= w * base;
    lists_[E.head].reserve += w * (base + lists_[E.head].allow);
  } else {
    H.fixed -= w * rate;
  }
  touch(E.head);
  if (E.members.empty()) drop_edge(e);
}

// The edge (head, tail), made if it does not exist.
BottleneckStructure::EdgeIndex BottleneckStructure::edge(LinkIndex head, LinkIndex tail) {
  const std::uint64_t key = (std::uint64_t{tail} << 32) | head;
  EdgeIndex e = edge_at_.find(key);
  if (e != FlatIndex::kAbsent) return e;
  e = take_slot(edges_, free_edges_, kNone - 1, "too many edges");
  Edge& E = edges_[e];
  E.head = head;
  E.tail = tail;
  E.in_slot = static_cast<std::uint32_t>(lists_[head].in.size());
  lists_[head].in.push_back({e, tail, 0.0});
  enlist_out(e, !keep_all_ && links_[head].limited == 0, {head, e, 0.0}, links_[tail].level);
  edge_at_.insert(key, e);
  return e;
}

// Out-edge `slot` of `list` (a tail's out or passive list) leaves it, the
// last taking its place; returns what it held.
template <typename List>
BottleneckStructure::OutEdge BottleneckStructure::unlist(List& list, std::uint32_t slot) {
  const OutEdge o = list[slot];
  edges_[list.back().edge].out_slot = slot;
  list[slot] = list.back();
  list.pop_back();
  return o;
}

// Out-edge `slot` of a tail's passive list (with its bound) or of its
// list of edges to links that limit flows leaves it.
BottleneckStructure::OutEdge BottleneckStructure::unlist_out(Lists& tail, bool passive, std::uint32_t slot) {
  if (!passive) return unlist(tail.out, slot);
  tail.bounds[slot] = tail.bounds.back();
  tail.bounds.pop_back();
  return unlist(tail.passive, slot);
}

// Edge e's out-edge `o` joins its tail's passive list (with its base and
// bound) or its list of edges to links that limit flows.
void BottleneckStructure::enlist_out(EdgeIndex e, bool passive, const OutEdge& o, double base) {
  Edge& E = edges_[e];
  Lists& T = lists_[E.tail];
  E.passive = passive;
  if (passive) {
    E.out_slot = static_cast<std::uint32_t>(T.passive.size());
    T.passive.push_back({o, base});
    T.bounds.push_back(base + lists_[E.head].allow);
  } else {
    E.out_slot = static_cast<std::uint32_t>(T.out.size());
    T.out.push_back(o);
  }
  links_[E.tail].leaf = T.out.empty();
}

void BottleneckStructure::drop_edge(EdgeIndex e) {
  const Edge& E = edges_[e];
  std::vector<InEdge>& in = lists_[E.head].in;
  edges_[in.back().edge].in_slot = E.in_slot;
  in[E.in_slot] = in.back();
  in.pop_back();
  unlist_out(lists_[E.tail], E.passive, E.out_slot);
  links_[E.tail].leaf = lists_[E.tail].out.empty();
  // A link with no in-edges uses nothing of anyone: its running sum
  // starts again from an exact zero.
  if (in.empty()) {
    links_[E.head].fixed = 0;
    links_[E.head].max_in = 0;
  }
  edge_at_.erase((std::uint64_t{E.tail} << 32) | E.head);
  free_edges_.push_back(e);
}

// Link l waits for repair, once until it is repaired, keyed by its
// level: the order of the structure's edges, lowest first. Only a kept
// link that limits flows, or a passive one that is over capacity, has
// in-edges not counted in its allowance, or still has a level (the flows
// it took in found lower links; keyed lowest), can break (1)-(3).
void BottleneckStructure::queue(LinkIndex l) {
  Link& L = links_[l];
  if (L.queued || L.left_out) return;
  double key = 0;
  if (L.limited > 0)
    key = L.level;
  else if (L.stale || L.fixed > L.capacity * (1 + kSaturated) || L.level != kInf)
    key = -kInf;
  else
    return;
  L.queued = true;
  if (L.waited != stamp()) {
    L.waited = stamp();
    ++batch_waiting_;
  }
  if (L.leaf && L.limited > 0)
    leaves_.push_back(l);
  else
    heap_.push(waiting(key, l));
}

// Repairs the waiting links: those on the heap in level order, then the
// leaves (whose repairs may queue more). False when the batch has run
// past kMaxRepairs repairs per link it queued: the repair is not
// settling, and the caller builds afresh.
bool BottleneckStructure::drain() {
  const auto within = [&] { return ++batch_repairs_ <= kMaxRepairs * batch_waiting_; };
  for (;;) {
    while (!heap_.empty()) {
      const auto l = static_cast<LinkIndex>(heap_.pop_distinct());
      if (!heap_.empty()) prefetch_out(static_cast<LinkIndex>(heap_.top()));
      links_[l].queued = false;
      repair(l);
      if (!within()) return false;
    }
    if (leaves_.empty()) return true;
    draining_.swap(leaves_);
    for (const LinkIndex l : draining_) {
      links_[l].queued = false;
      repair(l);
    }
    draining_.clear();
    if (!within()) return false;
  }
}

// The next link to be repaired is fetched while this one is: its record
// and the first lines of its out-edges, which its level change will
// read (each link's out-edges are an array of their own, and the repair
// otherwise waits on the first lines of each).
void BottleneckStructure::prefetch_out(LinkIndex l) const {
  __builtin_prefetch(&links_[l]);
  const OutEdge* out = lists_[l].out.data();
  const std::size_t n = lists_[l].out.size();
  for (std::size_t i = 0; i < n && i < 4 * kOutPerLine; i += kOutPerLine) __builtin_prefetch(out + i);
}

// Link l is repaired: it takes in faster in-edges if (3) or (2) is
// broken, its level follows (1), and the flows taken in move to their
// lowest link.
void BottleneckStructure::repair(LinkIndex l) {
  ++stats_.repairs;
  if (links_[l].left_out) return;
  double level = -kInf;  // a passive link over capacity takes flows in
  if (links_[l].limited > 0) {
    if (++lists_[l].repairs % kRefresh == 0) refresh(l);
    level = (links_[l].capacity - links_[l].fixed) / links_[l].wsum;
  } else {
    set_level(l, kInf);
    if (!sync(l)) return;
  }
  Link& L = links_[l];
  taken_.clear();
  // (The link's record first: the list of in-edges is on another line.)
  if ((level == -kInf || L.max_in > level * (1 + kRateTolerance)) && !lists_[l].in.empty())
    level = take_in(l, level);
  set_level(l, level);
  if (taken_.empty()) return;
  movers_.clear();
  for (const EdgeIndex e : taken_)
    for (const PathPool::Entry& m : edges_[e].members) movers_.push_back(m.flow);
  for (const FlowIndex f : movers_) move(f, lowest_hop(f));
  queue(l);
}

// Water-filling over l's in-edges: those faster than the level l would
// have are taken in, fastest first, each raising the level towards its
// own, until the next is no faster. Returns the level; taken_ lists the
// edges; max_in becomes exact for the rest.
double BottleneckStructure::take_in(LinkIndex l, double level) {
  Link& L = links_[l];
  faster_.clear();
  double rest = 0;
  for (const auto [e, tail, a] : lists_[l].in) {
    const double s = links_[tail].level;
    if (level == -kInf || s > level * (1 + kRateTolerance))
      faster_.push_back({s, e, a});
    else
      rest = std::max(rest, s);
  }
  std::sort(faster_.begin(), faster_.end(), [](const auto& a, const auto& b) {
    return a.level != b.level ? a.level > b.level : a.edge < b.edge;
  });
  double w = L.wsum;
  double fixed = L.fixed;
  std::size_t i = 0;
  for (; i < faster_.size(); ++i) {
    const auto [s, e, a] = faster_[i];
    if (w > 0 && !(s > level * (1 + kRateTolerance))) break;
    w += a;
    fixed -= a * s;
    level = (L.capacity - fixed) / w;
    taken_.push_back(e);
  }
  for (; i < faster_.size(); ++i) rest = std::max(rest, faster_[i].level);
  L.max_in = rest;
  stats_.takes += taken_.size();
  return level;
}

// Link l's level becomes `level` (kept when within the rate tolerance);
// the change moves F at the head of every out-edge.
void BottleneckStructure::set_level(LinkIndex l, double level) {
  Link& L = links_[l];
  const double old = L.level;
  if (old == level || (old < kInf && level < kInf && same_rate(level, old))) return;
  note_level(l);
  L.level = level;
  touch(l);
  if (old == kInf || level == kInf) return;  // it limited no flow, or limits none: no out-edges
  const double delta = level - old;
  const std::vector<OutEdge>& out = lists_[l].out;
  // queue() neither grows links_ nor changes the out-edges: the loop reads
  // both through locals, not through `this` after every store.
  // A head's max_in is at least the old level already: only a rise can
  // move it (the loop is unswitched on `rose`).
  Link* const links = links_.data();
  const bool rose = delta > 0;
  for (const OutEdge& o : out) {
    Link& K = links[o.head];
    K.fixed += o.weight * delta;
    if (rose) K.max_in = std::max(K.max_in, level);
    if (!K.queued) queue(o.head);
  }
  if (keep_all_)
    for (const OutEdge& o : out) touch(o.head);
  stats_.pushes += out.size();
  if (level > L.alarm) trip(l);
}

// The kept hop of flow f with the lowest level (its bottleneck on ties).
// f is in the lists and edges (a mover), so a hop of it is kept exactly
// when it is f's bottleneck or has an edge (check_edge): the path's own
// array says so, without a visit to each link left out.
std::uint32_t BottleneckStructure::lowest_hop(FlowIndex f) const {
  const Flow& fl = flows_[f];
  std::uint32_t best = fl.bneck;
  double lowest = links_[bottleneck(f)].level;
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    if (paths_.edge[fl.off + h] == PathPool::kNoEdge) continue;  // the bottleneck, or left out
    const double level = links_[link_at(f, h)].level;
    if (level < lowest) {
      best = h;
      lowest = level;
    }
  }
  return best;
}

// Flow f becomes limited at its hop `to`: its edges now start there, and
// its rate is that link's level.
void BottleneckStructure::move(FlowIndex f, std::uint32_t to) {
  Flow& fl = flows_[f];
  const std::uint32_t from = fl.bneck;
  if (to == from) return;
  ++stats_.moves;
  note_move(f, bottleneck(f));
  const LinkIndex from_link = bottleneck(f);
  const double before = links_[from_link].level;
  // Edges to passive links stay: their tails still bound f's rate, unless
  // the tail is the link f leaves and will limit no flow.
  const bool from_ends = links_[from_link].limited == 1;
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    const EdgeIndex e = paths_.edge[fl.off + h];
    if (h == from || e == PathPool::kNoEdge) continue;
    if (h != to && edges_[e].passive && !(from_ends && edges_[e].tail == from_link)) continue;
    leave_edge(f, h, before);
  }
  unlimit(f);
  limit(f, to);
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    if (!hop_kept(f, h)) continue;
    if (h != to && paths_.edge[fl.off + h] == PathPool::kNoEdge) join_edge(f, h);
    queue(link_at(f, h));
  }
}

// F summed afresh from the in-edges (the running sum drifts).
void BottleneckStructure::refresh(LinkIndex l) {
  double fixed = 0;
  for (const auto [e, tail, a] : lists_[l].in) fixed += a * links_[tail].level;
  links_[l].fixed = fixed;
}

}  // namespace meshsim::sim::kernel
