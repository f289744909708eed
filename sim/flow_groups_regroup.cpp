// How flow groups change (sim/flow_groups.h): links tracked when a bound
// may break and dropped when far from it, groups split when their
// bottleneck is not every member's, and merged when two share one; and
// each group's heap of members.
#include <algorithm>
#include <limits>

#include "core/error.h"
#include "sim/flow_groups.h"
#include "sim/numeric.h"

namespace meshsim::sim {

// Groups rated above their alarm: the alarm is recomputed, and the
// untracked links whose bound the rate breaks are tracked. True when one
// was (the solve must be repeated).
bool FlowGroups::check_alarms() {
  rated_.insert(rated_.end(), alarmed_.begin(), alarmed_.end());
  alarmed_.clear();
  bool any = false;
  for (const GroupIndex g : rated_) {
    if (groups_[g].heap.empty() || groups_[g].rate <= groups_[g].alarm) continue;
    // One pass over the members' untracked links: those the rate breaks
    // are tracked, the others set the alarm. (track() changes the members'
    // groups' sums, not this group's member list.)
    const double rate = groups_[g].rate;
    double alarm = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < groups_[g].heap.size(); ++k) {
      const Flow& fl = flows_[groups_[g].heap[k]];
      for (std::uint32_t i = fl.off; i < fl.off + fl.len; ++i) {
        const LinkIndex l = paths_.link[i];
        if (links_[l].tracked) continue;
        if (rate <= links_[l].theta()) {
          alarm = std::min(alarm, links_[l].theta());
        } else {
          track(l);
          any = true;
        }
      }
    }
    groups_[g].alarm = alarm;
  }
  return any;
}

// Link l becomes a constraint of the solver for every group with a flow
// on it.
void FlowGroups::track(LinkIndex l) {
  Link& link = links_[l];
  link.tracked = true;
  link.looked_at = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(link.flows.size()));
  ++stats_.tracks;
  for (const PathPool::Entry& e : link.flows) {
    Flow& fl = flows_[e.flow];
    ++fl.tracked;
    if (fl.group == kNoGroup) continue;
    agg_add(fl.group, l, paths_.weight[fl.off + e.hop], 1);
    mark_dirty(fl.group);
  }
}

// A tracked link whose flow count has doubled since it was last looked at
// is dropped if it is nobody's bottleneck, no flow relies on it alone, and
// its bound holds with half its capacity to spare.
void FlowGroups::consider_dropping(LinkIndex l) {
  Link& link = links_[l];
  if (track_all_ || !link.tracked || link.flows.size() < 2 * std::size_t{link.looked_at}) return;
  link.looked_at = static_cast<std::uint32_t>(link.flows.size());
  if (link.keyed != kNoGroup) return;
  double fastest = 0;
  for (const PathPool::Entry& e : link.flows) {
    const Flow& fl = flows_[e.flow];
    if (fl.tracked == 1 && fl.cap == 0) return;
    if (fl.group != kNoGroup) fastest = std::max(fastest, groups_[fl.group].rate);
  }
  if (fastest > 0.5 * link.theta()) return;
  link.tracked = false;
  ++stats_.untracks;
  const double theta = link.theta();
  for (const PathPool::Entry& e : link.flows) {
    Flow& fl = flows_[e.flow];
    --fl.tracked;
    if (fl.group == kNoGroup) continue;
    agg_sub(fl.group, l, paths_.weight[fl.off + e.hop]);
    lower_alarm(fl.group, theta);
    mark_dirty(fl.group);
  }
}

// Re-rated groups frozen at a link that only some members cross lose those
// members to a new group; the others are valid, keyed by that link. True
// when a group was split (the solve must be repeated).
bool FlowGroups::split_invalid(Time now) {
  bool any = false;
  for (std::size_t k = 0; k < rated_.size(); ++k) {
    const GroupIndex g = rated_[k];
    if (groups_[g].dirty || groups_[g].heap.empty()) continue;
    const std::uint32_t b = solver_.bottleneck(groups_[g].sid);
    MESHSIM_ASSERT(b != IncrementalMaxMin::kUnrated, "a solved group is rated");
    if (b == IncrementalMaxMin::kAtCap || crossing(g, b) == groups_[g].heap.size()) {
      set_key(g, b == IncrementalMaxMin::kAtCap ? kNoLink : b);
      continue;
    }
    anchor(g, now);
    const GroupIndex h = new_group(now, 0.0);
    for (const PathPool::Entry& e : links_[b].flows) {
      const FlowIndex f = e.flow;
      if (flows_[f].group != g) continue;
      const double left = flows_[f].finish - groups_[g].s0;
      drop_member(f);
      flows_[f].finish = left;  // h's service starts at 0
      add_member(h, f);
    }
    mark_dirty(h);
    ++stats_.splits;
    any = true;
  }
  return any;
}

// Valid uncapped groups frozen at the same link become one (the link's
// keyed group absorbs the others, the smaller into the larger).
void FlowGroups::merge_valid(Time now) {
  for (const GroupIndex g : rated_) {
    // (A dirty or freed group has no key.)
    const Group& G = groups_[g];
    if (G.key == kNoLink || G.cap > 0) continue;
    Link& link = links_[G.key];
    const GroupIndex k = link.keyed;
    if (k == g) continue;
    if (k == kNoGroup || groups_[k].key != G.key || groups_[k].cap > 0 ||
        !same_rate(G.rate, groups_[k].rate)) {
      link.keyed = g;
      continue;
    }
    const bool bigger = groups_[k].heap.size() >= G.heap.size();
    merge(bigger ? k : g, bigger ? g : k, now);
    link.keyed = bigger ? k : g;
  }
}

// Group `from`'s members join `into` (both valid at one link and rate).
void FlowGroups::merge(GroupIndex into, GroupIndex from, Time now) {
  anchor(into, now);
  anchor(from, now);
  Group& A = groups_[into];
  Group& B = groups_[from];
  for (const FlowIndex f : B.heap) {
    Flow& fl = flows_[f];
    fl.finish = A.s0 + (fl.finish - B.s0);
    fl.group = into;
    fl.heap_pos = static_cast<std::uint32_t>(A.heap.size());
    A.heap.push_back(f);
    heap_up(A, fl.heap_pos);
  }
  B.heap.clear();
  for (const Agg& a : B.agg) {
    agg_at_.erase((std::uint64_t{from} << 32) | a.link);
    agg_add(into, a.link, a.weight, a.count);
  }
  groups_[from].agg.clear();
  lower_alarm(into, groups_[from].alarm);
  solver_.merge(groups_[into].sid, groups_[from].sid);
  groups_[from].sid = kNoSid;
  groups_[from].key = kNoLink;  // (the link's group is `into` from here on)
  free_groups_.push_back(from);
  touch(into);
  touch(from);
  ++stats_.merges;
}

void FlowGroups::heap_up(Group& G, std::uint32_t i) {
  const FlowIndex f = G.heap[i];
  while (i > 0) {
    const std::uint32_t parent = (i - 1) / 2;
    if (flows_[G.heap[parent]].finish <= flows_[f].finish) break;
    G.heap[i] = G.heap[parent];
    flows_[G.heap[i]].heap_pos = i;
    i = parent;
  }
  G.heap[i] = f;
  flows_[f].heap_pos = i;
}

void FlowGroups::heap_down(Group& G, std::uint32_t i) {
  const FlowIndex f = G.heap[i];
  const auto n = static_cast<std::uint32_t>(G.heap.size());
  for (;;) {
    std::uint32_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && flows_[G.heap[child + 1]].finish < flows_[G.heap[child]].finish) ++child;
    if (flows_[G.heap[child]].finish >= flows_[f].finish) break;
    G.heap[i] = G.heap[child];
    flows_[G.heap[i]].heap_pos = i;
    i = child;
  }
  G.heap[i] = f;
  flows_[f].heap_pos = i;
}

void FlowGroups::heap_erase(Group& G, std::uint32_t i) {
  const FlowIndex last = G.heap.back();
  G.heap.pop_back();
  if (i == G.heap.size()) return;
  G.heap[i] = last;
  flows_[last].heap_pos = i;
  heap_up(G, i);
  heap_down(G, flows_[last].heap_pos);
}

}  // namespace meshsim::sim
