#include "sim/flow_groups.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "sim/numeric.h"

namespace meshsim::sim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// Solver rounds in one solve() before giving up: each round tracks a link
// or splits a group, so this is never reached by a correct run.
constexpr int kMaxRounds = 1 << 20;

// (Time::seconds() multiplies by 1e-12, which is not exact; dividing by
// 10^12 is correctly rounded.)
double seconds(Time d) {
  return static_cast<double>(d.count_ps()) / kPsPerSecond;
}
}  // namespace

FlowGroups::FlowGroups(std::vector<double> capacity) : solver_(capacity), links_(capacity.size()) {
  for (std::size_t l = 0; l < capacity.size(); ++l) links_[l].capacity = capacity[l];
  link_changed_.assign(links_.size(), 0);
}

void FlowGroups::track_all_links() {
  MESHSIM_ASSERT(active_ == 0, "links are all tracked before the first flow");
  track_all_ = true;
  for (Link& l : links_) l.tracked = true;
}

FlowGroups::FlowIndex FlowGroups::add(std::span<const LinkIndex> links, std::span<const double> weights,
                                      double cap, double bytes, Time now) {
  MESHSIM_ASSERT(weights.empty() || weights.size() == links.size(), "one weight per link");
  MESHSIM_ASSERT(!links.empty() || cap > 0, "a flow crosses a link or has a cap");
  FlowIndex f = 0;
  if (!free_flows_.empty()) {
    f = free_flows_.back();
    free_flows_.pop_back();
  } else {
    MESHSIM_ASSERT(flows_.size() < UINT32_MAX - 1, "too many flows");
    f = static_cast<FlowIndex>(flows_.size());
    flows_.emplace_back();
  }
  const auto len = static_cast<std::uint32_t>(links.size());
  const std::uint32_t off = paths_.alloc(len);
  flows_[f] = Flow{off, len, 0, cap, bytes, kNoGroup, 0};
  LinkIndex tightest = 0;
  for (std::uint32_t h = 0; h < len; ++h) {
    MESHSIM_ASSERT(links[h] < links_.size(), "a flow's link exists");
    paths_.link[off + h] = links[h];
    paths_.weight[off + h] = weights.empty() ? 1.0 : weights[h];
    MESHSIM_ASSERT(paths_.weight[off + h] > 0 && std::isfinite(paths_.weight[off + h]),
                   "link weights are positive");
    join_link(f, h);
    if (h == 0 || links_[links[h]].theta() < links_[tightest].theta()) tightest = links[h];
  }
  // Some link must hold back a flow without a cap.
  if (flows_[f].tracked == 0 && cap == 0) track(tightest);
  const GroupIndex g = new_group(now, cap);
  flows_[f].finish = bytes;  // the new group's service starts at 0
  add_member(g, f);
  mark_dirty(g);
  for (std::uint32_t h = 0; h < len; ++h) consider_dropping(paths_.link[off + h]);
  ++active_;
  return f;
}

// Flow f's entry on the link at its hop: the link's weight sum grows, and
// an untracked link's θ falls (lower_crowded_alarms).
void FlowGroups::join_link(FlowIndex f, std::uint32_t hop) {
  const std::uint32_t i = flows_[f].off + hop;
  Link& l = links_[paths_.link[i]];
  paths_.enlist(l.flows, i, f, hop);
  l.wsum += paths_.weight[i];
  if (l.tracked) {
    ++flows_[f].tracked;
    return;
  }
  if (l.crowded == stats_.solves + 1) return;
  l.crowded = stats_.solves + 1;
  crowded_.push_back(paths_.link[i]);
}

// The untracked links that gained flows since the last solve: the alarm of
// every group with a flow there falls to the link's θ (once per link and
// solve, however many flows joined it).
void FlowGroups::lower_crowded_alarms() {
  for (const LinkIndex l : crowded_) {
    const Link& link = links_[l];
    if (link.tracked) continue;
    const double theta = link.theta();
    for (const PathPool::Entry& e : link.flows)
      if (flows_[e.flow].group != kNoGroup) lower_alarm(flows_[e.flow].group, theta);
  }
  crowded_.clear();
}

// A group rated above its new alarm is checked at the next solve.
void FlowGroups::lower_alarm(GroupIndex g, double theta) {
  Group& G = groups_[g];
  if (theta >= G.alarm) return;
  if (G.rate > theta && G.rate <= G.alarm) alarmed_.push_back(g);
  G.alarm = theta;
}

FlowGroups::GroupIndex FlowGroups::new_group(Time now, double cap) {
  GroupIndex g = 0;
  if (!free_groups_.empty()) {
    g = free_groups_.back();
    free_groups_.pop_back();
  } else {
    MESHSIM_ASSERT(groups_.size() < UINT32_MAX - 1, "too many flow groups");
    g = static_cast<GroupIndex>(groups_.size());
    groups_.emplace_back();
  }
  Group& G = groups_[g];
  G.sid = kNoSid;
  G.cap = cap;
  G.alarm = kInf;
  G.rate = 0;
  G.s0 = 0;
  G.t0 = now;
  G.key = kNoLink;
  G.dirty = false;
  return g;
}

// Flow f (its finish in g's service) joins group g.
void FlowGroups::add_member(GroupIndex g, FlowIndex f) {
  Flow& fl = flows_[f];
  fl.group = g;
  Group& G = groups_[g];
  fl.heap_pos = static_cast<std::uint32_t>(G.heap.size());
  G.heap.push_back(f);
  heap_up(G, fl.heap_pos);
  for (std::uint32_t i = fl.off; i < fl.off + fl.len; ++i) {
    const Link& l = links_[paths_.link[i]];
    if (l.tracked)
      agg_add(g, paths_.link[i], paths_.weight[i], 1);
    else
      lower_alarm(g, l.theta());
  }
}

void FlowGroups::drop_member(FlowIndex f) {
  Flow& fl = flows_[f];
  const GroupIndex g = fl.group;
  heap_erase(groups_[g], fl.heap_pos);
  for (std::uint32_t i = fl.off; i < fl.off + fl.len; ++i)
    if (links_[paths_.link[i]].tracked) agg_sub(g, paths_.link[i], paths_.weight[i]);
  fl.group = kNoGroup;
  mark_dirty(g);
}

void FlowGroups::agg_add(GroupIndex g, LinkIndex l, double w, std::uint32_t count) {
  std::vector<Agg>& agg = groups_[g].agg;
  const auto [it, fresh] = agg_at_.try_emplace((std::uint64_t{g} << 32) | l, agg.size());
  if (fresh) {
    agg.push_back({l, w, count});
  } else {
    agg[it->second].weight += w;
    agg[it->second].count += count;
  }
}

void FlowGroups::agg_sub(GroupIndex g, LinkIndex l, double w) {
  std::vector<Agg>& agg = groups_[g].agg;
  const auto it = agg_at_.find((std::uint64_t{g} << 32) | l);
  MESHSIM_ASSERT(it != agg_at_.end(), "a group's tracked link is in its sums");
  const std::uint32_t i = it->second;
  agg[i].weight -= w;
  if (--agg[i].count > 0) return;
  agg_at_.erase(it);
  if (i + 1 < agg.size()) {
    agg[i] = agg.back();
    agg_at_[(std::uint64_t{g} << 32) | agg[i].link] = i;
  }
  agg.pop_back();
}

std::uint32_t FlowGroups::crossing(GroupIndex g, LinkIndex l) const {
  const auto it = agg_at_.find((std::uint64_t{g} << 32) | l);
  return it == agg_at_.end() ? 0 : groups_[g].agg[it->second].count;
}

// The bytes each member of G has moved since G's origin, at `now`.
double FlowGroups::service(const Group& G, Time now) {
  return now > G.t0 ? G.s0 + G.rate * seconds(now - G.t0) : G.s0;
}

void FlowGroups::anchor(GroupIndex g, Time now) {
  Group& G = groups_[g];
  G.s0 = service(G, now);
  G.t0 = now;
}

void FlowGroups::touch(GroupIndex g) {
  open_batch();
  if (groups_[g].touched == stats_.solves + 1) return;
  groups_[g].touched = stats_.solves + 1;
  touched_.push_back(g);
}

// touched_ lists the changes since the last solve() began.
void FlowGroups::open_batch() {
  if (batch_ == stats_.solves + 1) return;
  batch_ = stats_.solves + 1;
  touched_.clear();
}

void FlowGroups::mark_dirty(GroupIndex g) {
  touch(g);
  set_key(g, kNoLink);
  Group& G = groups_[g];
  if (G.dirty) return;
  G.dirty = true;
  dirty_.push_back(g);
}

// Group g is known to be frozen at link `key`, which all its members cross
// (kNoLink: not known); a link that named g as its group forgets it.
void FlowGroups::set_key(GroupIndex g, LinkIndex key) {
  Group& G = groups_[g];
  if (G.key != kNoLink && G.key != key && links_[G.key].keyed == g) links_[G.key].keyed = kNoGroup;
  G.key = key;
}

// The dirty groups' solver flows follow their members: empty groups are
// freed, the others re-added with their sums.
void FlowGroups::flush() {
  for (const GroupIndex g : dirty_) {
    Group& G = groups_[g];
    G.dirty = false;
    if (G.sid != kNoSid) solver_.remove(G.sid);
    G.sid = kNoSid;
    if (G.heap.empty()) {
      MESHSIM_ASSERT(G.agg.empty(), "an empty group has no link sums");
      free_groups_.push_back(g);
      continue;
    }
    scratch_links_.clear();
    scratch_weights_.clear();
    for (const Agg& a : G.agg) {
      scratch_links_.push_back(a.link);
      scratch_weights_.push_back(a.weight);
    }
    G.sid = solver_.add(scratch_links_, scratch_weights_, G.cap);
    if (owner_.size() <= G.sid) owner_.resize(G.sid + 1);
    owner_[G.sid] = g;
  }
  dirty_.clear();
}

void FlowGroups::solve(Time now) {
  open_batch();
  changed_links_.clear();
  rated_.clear();
  lower_crowded_alarms();
  for (int round = 0;; ++round) {
    MESHSIM_ASSERT(round < kMaxRounds, "flow groups did not settle");
    flush();
    solver_.solve();
    ++stats_.rounds;
    take_rates(now);
    if (check_alarms() || split_invalid(now)) continue;
    break;
  }
  merge_valid(now);
  stats_.regroups += touched_.size();
  ++stats_.solves;
}

// The solver's new rates become the groups' rates from now on.
void FlowGroups::take_rates(Time now) {
  for (const auto& change : solver_.changed()) {
    const GroupIndex g = owner_[change.flow];
    anchor(g, now);
    groups_[g].rate = solver_.rate(change.flow);
    touch(g);
    rated_.push_back(g);
  }
  for (const auto sid : solver_.rebottlenecked()) rated_.push_back(owner_[sid]);
  for (const LinkIndex l : solver_.changed_links())
    if (link_changed_[l] != stats_.solves + 1) {
      link_changed_[l] = stats_.solves + 1;
      changed_links_.push_back(l);
    }
}

Time FlowGroups::done_at(const Group& G, FlowIndex f) const {
  if (G.rate <= 0) return Time::max();
  const double left = flows_[f].finish - G.s0;
  return G.t0 + (left <= 0 ? Time::zero() : duration_up(left / G.rate));
}

Time FlowGroups::next_done(GroupIndex g) const {
  const Group& G = groups_[g];
  return G.heap.empty() ? Time::max() : done_at(G, G.heap.front());
}

void FlowGroups::take_done(GroupIndex g, Time now, std::vector<FlowIndex>& out) {
  while (!groups_[g].heap.empty()) {
    const FlowIndex f = groups_[g].heap.front();
    if (done_at(groups_[g], f) > now) break;
    retire(f);
    out.push_back(f);
  }
}

// Flow f leaves its group and its links; its id and path are free again.
void FlowGroups::retire(FlowIndex f) {
  drop_member(f);
  const Flow& fl = flows_[f];
  for (std::uint32_t i = fl.off; i < fl.off + fl.len; ++i) {
    Link& l = links_[paths_.link[i]];
    paths_.unlist(l.flows, i, [&](FlowIndex g) { return flows_[g].off; });
    // An empty link starts again from an exact zero (running sums drift).
    l.wsum = l.flows.empty() ? 0.0 : l.wsum - paths_.weight[i];
    const auto n = static_cast<std::uint32_t>(l.flows.size());
    l.looked_at = std::min(l.looked_at, std::max<std::uint32_t>(1, n));
  }
  paths_.release(fl.off, fl.len);
  free_flows_.push_back(f);
  --active_;
}

double FlowGroups::remaining(FlowIndex f, Time now) const {
  return std::max(0.0, flows_[f].finish - service(groups_[flows_[f].group], now));
}

FlowGroups::Snapshot FlowGroups::snapshot() const {
  Snapshot s;
  for (const Link& l : links_) s.problem.capacity.push_back(l.capacity);
  for (const Flow& fl : flows_) {
    if (fl.group == kNoGroup) continue;
    s.problem.flows.push_back({{paths_.link.begin() + fl.off, paths_.link.begin() + fl.off + fl.len},
                               {paths_.weight.begin() + fl.off, paths_.weight.begin() + fl.off + fl.len},
                               fl.cap});
    s.rates.push_back(groups_[fl.group].rate);
  }
  return s;
}

}  // namespace meshsim::sim
