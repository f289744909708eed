#include "sim/maxmin_incremental.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "sim/numeric.h"

namespace meshsim::sim {

namespace {
// Heap values: a region link's index, kWatchTag | that index, or
// kFlowTag | a flow's region position (its cap).
constexpr std::uint64_t kFlowTag = std::uint64_t{1} << 63;
constexpr std::uint64_t kWatchTag = std::uint64_t{1} << 62;
constexpr std::uint64_t kIndexMask = kWatchTag - 1;

// Whether `a` is above `b` by more than the rate tolerance.
bool above(double a, double b) {
  return a > b * (1 + kRateTolerance);
}
}  // namespace

IncrementalMaxMin::IncrementalMaxMin(std::vector<double> capacity) : links_(capacity.size()) {
  for (std::size_t l = 0; l < capacity.size(); ++l) {
    MESHSIM_ASSERT(capacity[l] > 0, "link capacities are positive");
    links_[l].capacity = capacity[l];
  }
  link_mark_.assign(links_.size(), 0);
  dirty_mark_.assign(links_.size(), 0);
  local_.assign(links_.size(), 0);
}

IncrementalMaxMin::FlowIndex IncrementalMaxMin::add(std::span<const LinkIndex> links,
                                                    std::span<const double> weights, double cap) {
  MESHSIM_ASSERT(weights.empty() || weights.size() == links.size(), "one weight per link");
  MESHSIM_ASSERT(!links.empty() || cap > 0, "a flow crosses a link or has a cap");
  for (double w : weights) MESHSIM_ASSERT(w > 0 && std::isfinite(w), "link weights are positive");
  FlowIndex f = 0;
  if (!free_flows_.empty()) {
    f = free_flows_.back();
    free_flows_.pop_back();
  } else {
    MESHSIM_ASSERT(flows_.size() < kCap, "too many flows");
    f = static_cast<FlowIndex>(flows_.size());
    flows_.emplace_back();
    flow_mark_.push_back(0);
  }
  const auto len = static_cast<std::uint32_t>(links.size());
  if (free_paths_.size() <= len) free_paths_.resize(len + 1);
  std::uint32_t off = 0;
  if (!free_paths_[len].empty()) {
    off = free_paths_[len].back();
    free_paths_[len].pop_back();
  } else {
    MESHSIM_ASSERT(path_.size() + len < kCap, "flow path pool overflow");
    off = static_cast<std::uint32_t>(path_.size());
    path_.resize(path_.size() + len);
    weight_.resize(path_.size());
    slot_.resize(path_.size());
  }
  Flow& fl = flows_[f];
  fl = Flow{off, len, 0.0, cap, kNone, 0, true};
  for (std::uint32_t h = 0; h < len; ++h) {
    const LinkIndex l = links[h];
    MESHSIM_ASSERT(l < links_.size(), "a flow's link exists");
    path_[off + h] = l;
    weight_[off + h] = weights.empty() ? 1.0 : weights[h];
    slot_[off + h] = static_cast<std::uint32_t>(links_[l].flows.size());
    links_[l].flows.push_back({f, h});
    mark_dirty(l);
  }
  added_.push_back(f);
  ++active_;
  return f;
}

void IncrementalMaxMin::remove(FlowIndex f) {
  Flow& fl = flows_[f];
  MESHSIM_ASSERT(fl.active, "removing a flow that is not active");
  set_bneck(f, kNone);
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    const LinkIndex l = path_[fl.off + h];
    Link& link = links_[l];
    const std::uint32_t pos = slot_[fl.off + h];
    link.flows[pos] = link.flows.back();
    slot_[flows_[link.flows[pos].flow].off + link.flows[pos].hop] = pos;
    link.flows.pop_back();
    // An empty link starts again from exact zeros (running sums drift).
    link.load = link.flows.empty() ? 0.0 : link.load - weight_[fl.off + h] * fl.rate;
    if (link.flows.empty()) link.max_other = 0;
    mark_dirty(l);
  }
  fl.active = false;
  fl.rate = 0;
  free_paths_[fl.len].push_back(fl.off);
  free_flows_.push_back(f);
  --active_;
}

std::vector<IncrementalMaxMin::FlowIndex> IncrementalMaxMin::active_flows() const {
  std::vector<FlowIndex> out;
  for (FlowIndex f = 0; f < flows_.size(); ++f)
    if (flows_[f].active) out.push_back(f);
  return out;
}

void IncrementalMaxMin::mark_dirty(LinkIndex l) {
  if (dirty_mark_[l] == stats_.solves + 1) return;
  dirty_mark_[l] = stats_.solves + 1;
  dirty_.push_back(l);
}

void IncrementalMaxMin::join(FlowIndex f) {
  if (flow_mark_[f] == epoch_) return;
  flow_mark_[f] = epoch_;
  region_.push_back(f);
}

void IncrementalMaxMin::solve() {
  changed_.clear();
  changed_links_.swap(dirty_);
  dirty_.clear();
  ++epoch_;
  region_.clear();
  seed();
  if (!region_.empty()) {
    for (int round = 1;; ++round) {
      fill();
      // Flows that could not join mid-filling join the next one.
      const std::size_t filled = region_.size();
      for (FlowIndex g : deferred_) join(g);
      deferred_.clear();
      const bool grew = region_.size() > filled;
      if (!check() && !grew) break;
      if (round >= kMaxRounds || 2 * region_.size() > active_) {
        collect_component();
        fill();
        deferred_.clear();
        ++stats_.fallbacks;
        break;
      }
    }
    apply();
  }
  ++stats_.solves;
}

// R's first members: the new flows, and the flows bottlenecked on a link
// whose flow set changed.
void IncrementalMaxMin::seed() {
  for (FlowIndex f : added_)
    if (flows_[f].active && flows_[f].bneck == kNone) join(f);
  added_.clear();
  for (LinkIndex l : changed_links_)
    for (FlowIndex g : links_[l].bneck) join(g);
}

// Every flow connected to the region through shared links.
void IncrementalMaxMin::collect_component() {
  ++round_;
  std::vector<LinkIndex> stack;
  for (std::size_t i = 0; i < region_.size(); ++i) {
    const FlowIndex f = region_[i];
    for (LinkIndex l : links_of(f))
      if (link_mark_[l] != round_) {
        link_mark_[l] = round_;
        stack.push_back(l);
      }
    while (!stack.empty()) {
      const LinkIndex l = stack.back();
      stack.pop_back();
      for (const auto& e : links_[l].flows) join(e.flow);
    }
  }
}

// The region's links, each with its capacity left for the region, the
// weights of the region flows crossing it and their list (members_).
void IncrementalMaxMin::gather() {
  ++round_;
  region_links_.clear();
  rl_.clear();
  std::uint32_t members = 0;
  for (FlowIndex f : region_) {
    const Flow& fl = flows_[f];
    for (std::uint32_t h = 0; h < fl.len; ++h) {
      const LinkIndex l = path_[fl.off + h];
      if (link_mark_[l] != round_) {
        link_mark_[l] = round_;
        local_[l] = static_cast<std::uint32_t>(region_links_.size());
        region_links_.push_back(l);
        rl_.emplace_back();
      }
      RegionLink& x = rl_[local_[l]];
      x.old_use += weight_[fl.off + h] * fl.rate;
      x.wsum += weight_[fl.off + h];
      ++x.unfrozen;
      ++x.end;
      ++members;
    }
  }
  std::uint32_t at = 0;
  for (std::uint32_t j = 0; j < rl_.size(); ++j) {
    RegionLink& x = rl_[j];
    const Link& link = links_[region_links_[j]];
    x.rem = std::max(0.0, link.capacity - (link.load - x.old_use));
    x.begin = at;
    at += x.end;
    x.end = x.begin;
  }
  members_.resize(members);
  for (std::uint32_t i = 0; i < region_.size(); ++i)
    for (LinkIndex l : links_of(region_[i])) members_[rl_[local_[l]].end++] = i;
}

// Progressive filling of the region, the other flows fixed (maxmin.h). A
// link whose fixed flows are bottlenecked there is watched at their rate.
void IncrementalMaxMin::fill() {
  ++stats_.rounds;
  stats_.rerated += region_.size();
  gather();
  new_rate_.assign(region_.size(), -1.0);
  new_bneck_.assign(region_.size(), kNone);
  extras_.clear();
  watched_.clear();
  heap_.clear();
  for (std::uint32_t j = 0; j < rl_.size(); ++j) {
    heap_.push(rl_[j].rem / rl_[j].wsum, j);
    rl_[j].queued = rl_[j].rem / rl_[j].wsum;
    const Link& link = links_[region_links_[j]];
    if (!link.bneck.empty()) {
      heap_.push(link.level, kWatchTag | j);
      watched_.push_back(j);
    }
  }
  for (std::uint32_t i = 0; i < region_.size(); ++i)
    if (flows_[region_[i]].cap > 0) heap_.push(flows_[region_[i]].cap, kFlowTag | i);
  left_ = region_.size();
  // Once every region flow is frozen only watches that could let flows in
  // matter: `pending` counts them (-1: not counted since the last change).
  std::ptrdiff_t pending = -1;
  while (!heap_.empty()) {
    if (left_ > 0) {
      pending = -1;
    } else {
      if (pending < 0) pending = pending_watches();
      if (pending == 0) break;
    }
    const auto [key, tag] = heap_.pop();
    const auto j = static_cast<std::uint32_t>(tag & kIndexMask);
    if ((tag & kFlowTag) != 0) {
      if (new_rate_[j] < 0) freeze(j, key, kCap);
    } else if ((tag & kWatchTag) != 0) {
      if (left_ == 0 && !rl_[j].watched && carries_change(j)) --pending;
      watch(j, key);
    } else {
      fill_link(j, key);
    }
  }
  MESHSIM_ASSERT(left_ == 0, "progressive filling left flows without a rate");
}

// Link j comes up at `key`: it freezes its unfrozen flows at its share,
// unless the share has grown since (pushed again) or fixed flows faster
// than the share join the filling (condition B before the fact).
void IncrementalMaxMin::fill_link(std::uint32_t j, double key) {
  if (key != rl_[j].queued) return;  // superseded by a lower entry
  rl_[j].queued = std::numeric_limits<double>::infinity();
  if (rl_[j].unfrozen == 0) return;
  // Never below the filling's level (a share can sit a rounding error
  // under the key it was queued at).
  const double share = std::max(rl_[j].rem / rl_[j].wsum, key);
  // (admit_faster may add region links: rl_ moves.)
  if (share > key * (1 + kStaleShare) || admit_faster(j, share)) {
    rl_[j].queued = std::max(rl_[j].rem / rl_[j].wsum, key);
    heap_.push(rl_[j].queued, j);
    return;
  }
  RegionLink& x = rl_[j];
  x.level = share;
  const LinkIndex l = region_links_[j];
  for (std::uint32_t k = x.begin; k < x.end; ++k)
    if (new_rate_[members_[k]] < 0) freeze(members_[k], share, l);
  for (std::uint32_t e = x.extra; e != kNoExtra; e = extras_[e].next)
    if (new_rate_[extras_[e].member] < 0) freeze(extras_[e].member, share, l);
}

// The filling reaches the rate of the fixed flows bottlenecked at link j:
// if the region changed what the link carries, they join (condition A
// before the fact).
void IncrementalMaxMin::watch(std::uint32_t j, double level) {
  rl_[j].watched = true;
  if (!carries_change(j)) return;
  const Link& link = links_[region_links_[j]];
  for (std::size_t k = 0; k < link.bneck.size(); ++k) admit(link.bneck[k], level);
}

// Whether the region may change what link j carries: it has unfrozen
// region flows, or its frozen ones moved.
bool IncrementalMaxMin::carries_change(std::uint32_t j) const {
  const RegionLink& x = rl_[j];
  return x.unfrozen > 0 ||
         std::fabs(x.new_use - x.frozen_old) > kRateTolerance * links_[region_links_[j]].capacity;
}

// Watches still to come that could let flows in.
std::ptrdiff_t IncrementalMaxMin::pending_watches() const {
  return std::count_if(watched_.begin(), watched_.end(),
                       [&](std::uint32_t j) { return !rl_[j].watched && carries_change(j); });
}

// Fixed flows of link j faster than `level` join the filling; true when
// one did (the link's share then grew).
bool IncrementalMaxMin::admit_faster(std::uint32_t j, double level) {
  const LinkIndex l = region_links_[j];
  Link& link = links_[l];
  bool any = false;
  if (!link.bneck.empty() && above(link.level, level))
    for (std::size_t k = 0; k < link.bneck.size(); ++k) any = admit(link.bneck[k], level) || any;
  if (!above(link.max_other, level)) return any;
  ++stats_.scans;
  double bound = 0;
  for (std::size_t k = 0; k < link.flows.size(); ++k) {
    const FlowIndex g = link.flows[k].flow;
    if (flow_mark_[g] == epoch_) continue;
    if (above(flows_[g].rate, level))
      any = admit(g, level) || any;
    else if (flows_[g].bneck != l)
      bound = std::max(bound, flows_[g].rate);
  }
  link.max_other = bound;
  return any;
}

// Fixed flow g (rate ≥ level) joins the filling at `level`: as if it had
// been in the region from the start, which holds when none of its links
// has filled yet (below `level` it would have used less of them than its
// fixed rate did). Otherwise it waits for the next filling.
bool IncrementalMaxMin::admit(FlowIndex g, double level) {
  if (flow_mark_[g] == epoch_) return false;
  const Flow& fl = flows_[g];
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    const LinkIndex m = path_[fl.off + h];
    if (link_mark_[m] == round_ && rl_[local_[m]].level >= 0) {
      deferred_.push_back(g);
      return false;
    }
  }
  const auto i = static_cast<std::uint32_t>(region_.size());
  join(g);
  new_rate_.push_back(-1.0);
  new_bneck_.push_back(kNone);
  ++left_;
  ++stats_.rerated;
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    const LinkIndex m = path_[fl.off + h];
    const double w = weight_[fl.off + h];
    if (link_mark_[m] != round_) add_region_link(m, level);
    const std::uint32_t j = local_[m];
    RegionLink& x = rl_[j];
    x.old_use += w * fl.rate;
    x.rem += w * fl.rate;
    x.wsum += w;
    ++x.unfrozen;
    extras_.push_back({i, x.extra});
    x.extra = static_cast<std::uint32_t>(extras_.size() - 1);
    // The queued entry stays a lower bound unless the share fell below it.
    const double share = std::max(x.rem / x.wsum, level);
    if (share < x.queued) {
      x.queued = share;
      heap_.push(share, j);
    }
  }
  if (fl.cap > 0) heap_.push(std::max(fl.cap, level), kFlowTag | i);
  return true;
}

// Link m joins the region in the middle of a filling at `level`.
void IncrementalMaxMin::add_region_link(LinkIndex m, double level) {
  link_mark_[m] = round_;
  local_[m] = static_cast<std::uint32_t>(region_links_.size());
  region_links_.push_back(m);
  rl_.emplace_back();
  RegionLink& x = rl_.back();
  const Link& link = links_[m];
  x.rem = std::max(0.0, link.capacity - link.load);
  if (!link.bneck.empty()) {
    heap_.push(std::max(link.level, level), kWatchTag | (rl_.size() - 1));
    watched_.push_back(static_cast<std::uint32_t>(rl_.size() - 1));
  }
}

void IncrementalMaxMin::freeze(std::uint32_t i, double level, std::uint32_t bneck) {
  new_rate_[i] = level;
  new_bneck_[i] = bneck;
  --left_;
  const Flow& fl = flows_[region_[i]];
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    RegionLink& x = rl_[local_[path_[fl.off + h]]];
    const double w = weight_[fl.off + h];
    x.rem = std::max(0.0, x.rem - w * level);
    --x.unfrozen;
    x.wsum = x.unfrozen == 0 ? 0.0 : std::max(0.0, x.wsum - w);
    x.new_use += w * level;
    x.frozen_old += w * fl.rate;
    x.max_new = std::max(x.max_new, level);
  }
}

// Conditions (A) and (B) of the header on every link of the region; true
// when flows joined the region.
bool IncrementalMaxMin::check() {
  const std::size_t before = region_.size();
  for (std::uint32_t j = 0; j < rl_.size(); ++j) {
    const RegionLink& x = rl_[j];
    const LinkIndex l = region_links_[j];
    const Link& link = links_[l];
    if (!link.bneck.empty()) {
      const double load = link.load - x.old_use + x.new_use;
      const bool saturated = load >= link.capacity * (1 - kSaturated);
      if (!saturated || above(x.max_new, link.level) || (x.level >= 0 && above(link.level, x.level)))
        join_bottlenecked(l);
    }
    if (x.level >= 0 && above(link.max_other, x.level)) scan_others(l, x.level);
  }
  return region_.size() > before;
}

void IncrementalMaxMin::join_bottlenecked(LinkIndex l) {
  for (FlowIndex g : links_[l].bneck) join(g);
}

// The fixed flows of l faster than `level` join; the bound on the rates of
// l's other flows becomes exact for those that stay fixed.
void IncrementalMaxMin::scan_others(LinkIndex l, double level) {
  ++stats_.scans;
  Link& link = links_[l];
  double bound = 0;
  for (const auto& e : link.flows) {
    if (flow_mark_[e.flow] == epoch_) continue;
    const Flow& g = flows_[e.flow];
    if (above(g.rate, level))
      join(e.flow);
    else if (g.bneck != l)
      bound = std::max(bound, g.rate);
  }
  link.max_other = bound;
}

// The region's new rates and bottlenecks become the state; rates within
// the tolerance of the old keep the old value (and the flow's pending
// completion).
void IncrementalMaxMin::apply() {
  const std::uint64_t batch = stats_.solves + 1;
  for (std::uint32_t i = 0; i < region_.size(); ++i) {
    const FlowIndex f = region_[i];
    Flow& fl = flows_[f];
    const double old = fl.rate;
    const double rate = new_rate_[i];
    if (old <= 0 || !same_rate(rate, old)) {
      changed_.push_back({f, old});
      fl.rate = rate;
      for (std::uint32_t h = 0; h < fl.len; ++h) {
        const LinkIndex l = path_[fl.off + h];
        links_[l].load += weight_[fl.off + h] * (rate - old);
        if (dirty_mark_[l] != batch) {
          dirty_mark_[l] = batch;
          changed_links_.push_back(l);
        }
      }
    }
    set_bneck(f, new_bneck_[i]);
    for (LinkIndex l : links_of(f))
      if (l != fl.bneck) links_[l].max_other = std::max(links_[l].max_other, fl.rate);
  }
  for (std::uint32_t j = 0; j < rl_.size(); ++j)
    if (rl_[j].level >= 0) links_[region_links_[j]].level = rl_[j].level;
  stats_.changed += changed_.size();
}

void IncrementalMaxMin::set_bneck(FlowIndex f, std::uint32_t b) {
  Flow& fl = flows_[f];
  if (fl.bneck == b) return;
  if (fl.bneck < kCap) {
    auto& list = links_[fl.bneck].bneck;
    const FlowIndex moved = list.back();
    list[fl.bneck_slot] = moved;
    flows_[moved].bneck_slot = fl.bneck_slot;
    list.pop_back();
  }
  fl.bneck = b;
  if (b < kCap) {
    fl.bneck_slot = static_cast<std::uint32_t>(links_[b].bneck.size());
    links_[b].bneck.push_back(f);
  }
}

}  // namespace meshsim::sim
