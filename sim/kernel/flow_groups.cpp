#include "sim/kernel/flow_groups.h"

#include <algorithm>

#include "core/error.h"
#include "sim/kernel/numeric.h"

namespace meshsim::sim::kernel {

namespace {
// (Time::seconds() multiplies by 1e-12, which is not exact; dividing by
// 10^12 is correctly rounded.)
double seconds(Time d) {
  return static_cast<double>(d.count_ps()) / kPsPerSecond;
}
}  // namespace

FlowGroups::FlowGroups(const std::vector<double>& capacity) : structure_(capacity) {}

FlowGroups::FlowIndex FlowGroups::add(std::span<const LinkIndex> links, std::span<const double> weights,
                                      double cap, double bytes, Time /*now*/) {
  const FlowIndex f = structure_.add(links, weights, cap);
  if (flows_.size() <= f) flows_.resize(f + 1);
  flows_[f] = Flow{bytes, kNoGroup, 0};
  return f;
}

// The bytes each member of G has moved since G's origin, at `now`.
double FlowGroups::service(const Group& G, Time now) {
  return now > G.t0 ? G.s0 + G.rate * seconds(now - G.t0) : G.s0;
}

FlowGroups::Group& FlowGroups::group(GroupIndex g) {
  if (groups_.size() <= g) groups_.resize(g + 1);
  return groups_[g];
}

// Group g's service is anchored at `now` (an empty group starts again
// from zero) and it takes its link's level as its rate.
void FlowGroups::anchor(Group& G, GroupIndex g, Time now) {
  G.s0 = G.heap.empty() ? 0.0 : service(G, now);
  G.t0 = now;
  G.rate = structure_.level(g);
  touch(G, g);
}

// Flow f joins group g with `left` bytes to move.
void FlowGroups::join(FlowIndex f, GroupIndex g, double left, Time now) {
  Group& G = group(g);
  if (G.heap.empty()) anchor(G, g, now);
  Flow& fl = flows_[f];
  fl.group = g;
  fl.finish = service(G, now) + left;
  MemberHeap::push(G.heap, Member{fl.finish, f}, finishes_first(), member_placed());
  refront(G);
  touch(G, g);
}

// Flow f leaves its group; returns the bytes it has left to move.
double FlowGroups::leave(FlowIndex f, Time now) {
  Flow& fl = flows_[f];
  Group& G = groups_[fl.group];
  const double left = fl.finish - service(G, now);
  MemberHeap::erase(G.heap, fl.heap_pos, finishes_first(), member_placed());
  refront(G);
  touch(G, fl.group);
  fl.group = kNoGroup;
  return left;
}

void FlowGroups::touch(Group& G, GroupIndex g) {
  if (G.touched == stats_.solves + 1) return;
  G.touched = stats_.solves + 1;
  touched_.push_back(g);
}

// After the structure's repair: groups whose level moved are re-anchored
// (at the rate they had until now), then flows whose bottleneck moved
// change groups, and new flows join theirs.
void FlowGroups::solve(Time now) {
  // The last solve's groups go (they come first); those take_done touched
  // since stay.
  touched_.erase(touched_.begin(), touched_.begin() + static_cast<std::ptrdiff_t>(solved_));
  structure_.solve();
  for (const BottleneckStructure::LevelChange& c : structure_.level_changes()) {
    Group& G = group(c.link);
    MESHSIM_ASSERT(G.heap.empty() || G.rate == c.before, "a group's rate is its link's level");
    anchor(G, c.link, now);
  }
  for (const BottleneckStructure::Move& m : structure_.moves()) {
    const double left = m.before == BottleneckStructure::kNone ? flows_[m.flow].finish : leave(m.flow, now);
    join(m.flow, structure_.bottleneck(m.flow), left, now);
  }
  stats_.retimed += touched_.size();
  solved_ = touched_.size();
  ++stats_.solves;
}

void FlowGroups::take_done(GroupIndex g, Time now, std::vector<FlowIndex>& out) {
  while (!groups_[g].heap.empty()) {
    const FlowIndex f = groups_[g].heap.front().flow;
    if (done_at(groups_[g], groups_[g].front) > now) break;
    MemberHeap::erase(groups_[g].heap, 0, finishes_first(), member_placed());
    refront(groups_[g]);
    touch(groups_[g], g);  // its level may stay (others may take the flow's share): its timer must move
    flows_[f].group = kNoGroup;
    structure_.remove(f);
    out.push_back(f);
  }
}

double FlowGroups::remaining(FlowIndex f, Time now) const {
  const Flow& fl = flows_[f];
  if (fl.group == kNoGroup) return fl.finish;
  return std::max(0.0, fl.finish - service(groups_[fl.group], now));
}

}  // namespace meshsim::sim::kernel
