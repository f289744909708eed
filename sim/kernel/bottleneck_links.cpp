// Which links the bottleneck structure keeps, and building it afresh
// (sim/kernel/bottleneck_structure.h).
#include <algorithm>

#include "core/error.h"
#include "sim/kernel/bottleneck_structure.h"

namespace meshsim::sim::kernel {

// Flow f enters the lists of its network links; each link's candidates
// are chosen (its first flow: f's hops ordered by tightness once) or
// thinned, and a link left without any joins the structure.
void BottleneckStructure::enter_links(FlowIndex f) {
  const Flow& fl = flows_[f];
  ++mark_stamp_;
  for (std::uint32_t h = 0; h < fl.links; ++h) {
    mark_[link_at(f, h)] = mark_stamp_;
    mark_weight_[link_at(f, h)] = weight_at(f, h);
  }
  tightest_.clear();
  for (std::uint32_t h = 0; h < fl.links; ++h) {
    const LinkIndex l = link_at(f, h);
    Lists& L = lists_[l];
    occupant_[l] = kListed;
    PathPool::enlist(L.flows, paths_.slot, fl.off + h, f, h);
    if (L.flows.size() > 1) {
      if (!kept(l)) thin(l, f, h);
      continue;
    }
    if (tightest_.empty()) {
      for (std::uint32_t k = 0; k < fl.links; ++k) tightest_.push_back(link_at(f, k));
      std::sort(tightest_.begin(), tightest_.end(), [&](LinkIndex a, LinkIndex b) { return tighter(a, b); });
    }
    first_flow(l, f, h);
  }
}

// The links of f's path that could carry everything l carries: tighter
// than l, and crossed at least as heavily; the kCandidates tightest of
// them (f's links ordered by tightness in tightest_).
void BottleneckStructure::first_flow(LinkIndex l, FlowIndex f, std::uint32_t hop) {
  Lists& L = lists_[l];
  L.ncand = 0;
  links_[l].left_out = false;
  if (keep_all_) return;
  const double w = weight_at(f, hop);
  for (std::uint32_t i = 0; i < tightest_.size() && i < kLook && L.ncand < kCandidates; ++i) {
    const LinkIndex m = tightest_[i];
    if (!tighter(m, l)) break;
    if (mark_weight_[m] >= w) L.cand[L.ncand++] = m;
  }
  links_[l].left_out = L.ncand > 0;
}

// Flow f joins link l, which is left out: the candidates f does not cross
// as heavily are dropped; with none left, l joins the structure.
void BottleneckStructure::thin(LinkIndex l, FlowIndex f, std::uint32_t hop) {
  Lists& L = lists_[l];
  const double w = weight_at(f, hop);
  std::uint32_t kept_cand = 0;
  for (std::uint32_t i = 0; i < L.ncand; ++i)
    if (mark_[L.cand[i]] == mark_stamp_ && mark_weight_[L.cand[i]] >= w) L.cand[kept_cand++] = L.cand[i];
  L.ncand = kept_cand;
  if (L.ncand == 0) keep(l, f);
}

// Link l joins the structure: the flows on it (but f, which is being
// added and joins its edges itself) join the edges to l.
void BottleneckStructure::keep(LinkIndex l, FlowIndex f) {
  links_[l].left_out = false;
  ++stats_.joins;
  for (std::size_t i = 0; i < lists_[l].flows.size(); ++i) {
    const PathPool::Entry e = lists_[l].flows[i];
    if (e.flow != f) join_edge(e.flow, e.hop);
  }
  queue(l);
}

// Flow f leaves the lists of its network links; an empty link forgets its
// candidates (its next flow chooses again).
void BottleneckStructure::leave_links(FlowIndex f) {
  const Flow& fl = flows_[f];
  for (std::uint32_t h = 0; h < fl.links; ++h) {
    const LinkIndex l = link_at(f, h);
    Lists& L = lists_[l];
    PathPool::unlist(L.flows, paths_.slot, fl.off + h, [&](FlowIndex g) { return flows_[g].off; });
    if (!L.flows.empty()) continue;
    occupant_[l] = kFree;
    links_[l].left_out = false;
    L.ncand = 0;
  }
}

// The structure built afresh: rates and bottlenecks from a progressive
// filling of the active flows over the kept links and caps, then levels,
// weights and edges from them.
void BottleneckStructure::rebuild() {
  ++stats_.rebuilds;
  // Flows alone are built with the others, from their lists.
  for (FlowIndex f = 0; f < flows_.size(); ++f)
    if (flows_[f].active && flows_[f].alone) {
      flows_[f].alone = false;
      enter_links(f);
    }
  heap_.clear();
  leaves_.clear();
  MaxMinProblem p;
  std::vector<std::uint32_t> local(links_.size(), kNone);  // link → its index in p
  std::vector<LinkIndex> global;
  std::vector<FlowIndex> order;
  for (FlowIndex f = 0; f < flows_.size(); ++f) {
    const Flow& fl = flows_[f];
    if (!fl.active) continue;
    MaxMinFlow mf;
    for (std::uint32_t h = 0; h < fl.len; ++h) {
      const LinkIndex l = link_at(f, h);
      if (!kept(l)) continue;
      if (local[l] == kNone) {
        local[l] = static_cast<std::uint32_t>(global.size());
        global.push_back(l);
        p.capacity.push_back(links_[l].capacity);
      }
      mf.links.push_back(local[l]);
      mf.weights.push_back(weight_at(f, h));
    }
    p.flows.push_back(std::move(mf));
    order.push_back(f);
  }
  const MaxMinSolution s = max_min_solve(p);
  // Tear down: no edges, no flow limited anywhere.
  for (FlowIndex f : order)
    for (std::uint32_t h = 0; h < flows_[f].len; ++h) paths_.edge[flows_[f].off + h] = PathPool::kNoEdge;
  for (Edge& e : edges_) e.members.clear();
  edges_.clear();
  free_edges_.clear();
  edge_at_.clear();
  for (LinkIndex l = 0; l < links_.size(); ++l) {
    Link& L = links_[l];
    if (L.level != kInf) note_level(l);
    lists_[l].in.clear();
    lists_[l].out.clear();
    lists_[l].passive.clear();
    lists_[l].bounds.clear();
    L.wsum = L.fixed = L.max_in = 0;
    L.limited = 0;
    L.level = L.alarm = kInf;
    lists_[l].allow = kInf;
    L.queued = L.stale = false;
    L.leaf = true;
  }
  // Each flow limited where the filling froze it, at the level it froze at.
  for (std::size_t i = 0; i < order.size(); ++i) {
    const FlowIndex f = order[i];
    MESHSIM_ASSERT(s.bottleneck[i] != MaxMinSolution::kFrozenAtCap, "caps are links of the problem");
    const LinkIndex b = global[s.bottleneck[i]];
    std::uint32_t hop = 0;
    while (link_at(f, hop) != b) ++hop;
    note_move(f, bottleneck(f));
    if (links_[b].level == kInf) {
      note_level(b);
      links_[b].level = s.rate[i];
    }
    limit(f, hop);
  }
  for (FlowIndex f : order) {
    for (std::uint32_t h = 0; h < flows_[f].len; ++h)
      if (h != flows_[f].bneck && hop_kept(f, h)) join_edge(f, h);
  }
  for (LinkIndex l : global) queue(l);
  batch_repairs_ = 0;
  const bool settled = drain();
  MESHSIM_ASSERT(settled, "the bottleneck structure settles after a rebuild");
}

}  // namespace meshsim::sim::kernel
