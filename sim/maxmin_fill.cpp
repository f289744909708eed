// The progressive filling of a region (sim/maxmin_incremental.h): its
// links, the filling in level order, and the fixed flows it lets in.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "sim/maxmin_incremental.h"
#include "sim/numeric.h"

namespace meshsim::sim {

namespace {
// Heap values: a region link's index, kWatchTag | that index, or
// kFlowTag | a flow's region position (its cap).
constexpr std::uint64_t kFlowTag = std::uint64_t{1} << 63;
constexpr std::uint64_t kWatchTag = std::uint64_t{1} << 62;
constexpr std::uint64_t kIndexMask = kWatchTag - 1;
}  // namespace

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
      const LinkIndex l = paths_.link[fl.off + h];
      if (link_mark_[l] != round_) {
        link_mark_[l] = round_;
        local_[l] = static_cast<std::uint32_t>(region_links_.size());
        region_links_.push_back(l);
        rl_.emplace_back();
      }
      RegionLink& x = rl_[local_[l]];
      x.old_use += paths_.weight[fl.off + h] * fl.rate;
      x.wsum += paths_.weight[fl.off + h];
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
    queue(j, rl_[j].rem / rl_[j].wsum);
    queue_watch(j, 0);
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
    queue(j, std::max(rl_[j].rem / rl_[j].wsum, key));
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
  if (!link.bneck.empty() && rate_above(link.level, level))
    for (std::size_t k = 0; k < link.bneck.size(); ++k) any = admit(link.bneck[k], level) || any;
  if (rate_above(link.max_other, level)) any = take_faster(l, level, true) || any;
  return any;
}

// The fixed flows of l faster than `level` join: `now` in this filling
// (true when one did), else in the next. The bound on the rates of l's
// other flows becomes exact for those that stay fixed.
bool IncrementalMaxMin::take_faster(LinkIndex l, double level, bool now) {
  ++stats_.scans;
  Link& link = links_[l];
  bool any = false;
  double bound = 0;
  for (std::size_t k = 0; k < link.flows.size(); ++k) {
    const FlowIndex g = link.flows[k].flow;
    if (flow_mark_[g] == epoch_) continue;
    if (!rate_above(flows_[g].rate, level)) {
      if (flows_[g].bneck != l) bound = std::max(bound, flows_[g].rate);
    } else if (now) {
      any = admit(g, level) || any;
    } else {
      join(g);
    }
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
    const LinkIndex m = paths_.link[fl.off + h];
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
    const LinkIndex m = paths_.link[fl.off + h];
    const double w = paths_.weight[fl.off + h];
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
    if (share < x.queued) queue(j, share);
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
  x.rem = std::max(0.0, links_[m].capacity - links_[m].load);
  queue_watch(static_cast<std::uint32_t>(rl_.size() - 1), level);
}

// Region link j's entry at `share`, the key its pops are checked against.
void IncrementalMaxMin::queue(std::uint32_t j, double share) {
  rl_[j].queued = share;
  heap_.push(share, j);
}

// A watch for region link j at the rate of its bottlenecked flows (no
// lower than `level`), if it has any.
void IncrementalMaxMin::queue_watch(std::uint32_t j, double level) {
  const Link& link = links_[region_links_[j]];
  if (link.bneck.empty()) return;
  heap_.push(std::max(link.level, level), kWatchTag | j);
  watched_.push_back(j);
}

void IncrementalMaxMin::freeze(std::uint32_t i, double level, std::uint32_t bneck) {
  new_rate_[i] = level;
  new_bneck_[i] = bneck;
  --left_;
  const Flow& fl = flows_[region_[i]];
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    RegionLink& x = rl_[local_[paths_.link[fl.off + h]]];
    const double w = paths_.weight[fl.off + h];
    x.rem = std::max(0.0, x.rem - w * level);
    --x.unfrozen;
    x.wsum = x.unfrozen == 0 ? 0.0 : std::max(0.0, x.wsum - w);
    x.new_use += w * level;
    x.frozen_old += w * fl.rate;
    x.max_new = std::max(x.max_new, level);
  }
}

}  // namespace meshsim::sim
