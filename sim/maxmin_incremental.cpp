#include "sim/maxmin_incremental.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "sim/numeric.h"

namespace meshsim::sim {

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
  flows_[f] = Flow{0, 0, 0.0, cap, kNone, 0, true};
  attach(f, links, weights);
  for (LinkIndex l : links) mark_dirty(l);
  added_.push_back(f);
  ++active_;
  return f;
}

// Gives flow f a path: a block of the path pool and an entry in each
// link's flow list.
void IncrementalMaxMin::attach(FlowIndex f, std::span<const LinkIndex> links,
                               std::span<const double> weights) {
  const auto len = static_cast<std::uint32_t>(links.size());
  const std::uint32_t off = paths_.alloc(len);
  flows_[f].off = off;
  flows_[f].len = len;
  for (std::uint32_t h = 0; h < len; ++h) {
    const LinkIndex l = links[h];
    MESHSIM_ASSERT(l < links_.size(), "a flow's link exists");
    paths_.link[off + h] = l;
    paths_.weight[off + h] = weights.empty() ? 1.0 : weights[h];
    paths_.enlist(links_[l].flows, off + h, f, h);
  }
}

// Takes flow f off its links' flow lists and returns its path block.
void IncrementalMaxMin::detach(FlowIndex f) {
  const Flow& fl = flows_[f];
  for (std::uint32_t i = fl.off; i < fl.off + fl.len; ++i)
    paths_.unlist(links_[paths_.link[i]].flows, i, [&](FlowIndex g) { return flows_[g].off; });
  paths_.release(fl.off, fl.len);
}

void IncrementalMaxMin::remove(FlowIndex f) {
  Flow& fl = flows_[f];
  MESHSIM_ASSERT(fl.active, "removing a flow that is not active");
  set_bneck(f, kNone);
  detach(f);
  for (std::uint32_t h = 0; h < fl.len; ++h) {
    const LinkIndex l = paths_.link[fl.off + h];
    Link& link = links_[l];
    // An empty link starts again from exact zeros (running sums drift).
    link.load = link.flows.empty() ? 0.0 : link.load - paths_.weight[fl.off + h] * fl.rate;
    if (link.flows.empty()) link.max_other = 0;
    mark_dirty(l);
  }
  fl.active = false;
  fl.rate = 0;
  free_flows_.push_back(f);
  --active_;
}

void IncrementalMaxMin::merge(FlowIndex into, FlowIndex from) {
  Flow& a = flows_[into];
  Flow& b = flows_[from];
  MESHSIM_ASSERT(into != from && a.active && b.active, "merging two active flows");
  MESHSIM_ASSERT(a.bneck < kCap && a.bneck == b.bneck && a.cap == 0 && b.cap == 0,
                 "merged flows are uncapped and share their bottleneck link");
  // (link_mark_ and local_ are filling scratch, free between solves.)
  ++round_;
  merged_links_.clear();
  merged_weights_.clear();
  for (const Flow* fl : {&a, &b})
    for (std::uint32_t h = 0; h < fl->len; ++h) {
      const LinkIndex l = paths_.link[fl->off + h];
      if (link_mark_[l] != round_) {
        link_mark_[l] = round_;
        local_[l] = static_cast<std::uint32_t>(merged_links_.size());
        merged_links_.push_back(l);
        merged_weights_.push_back(0.0);
      }
      merged_weights_[local_[l]] += paths_.weight[fl->off + h];
    }
  set_bneck(from, kNone);
  detach(from);
  b.active = false;
  b.rate = 0;
  free_flows_.push_back(from);
  --active_;
  detach(into);
  attach(into, merged_links_, merged_weights_);
}
IncrementalMaxMin::Snapshot IncrementalMaxMin::snapshot() const {
  Snapshot s;
  for (const Link& link : links_) s.problem.capacity.push_back(link.capacity);
  for (FlowIndex f = 0; f < flows_.size(); ++f) {
    const Flow& fl = flows_[f];
    if (!fl.active) continue;
    s.problem.flows.push_back({{paths_.link.begin() + fl.off, paths_.link.begin() + fl.off + fl.len},
                               {paths_.weight.begin() + fl.off, paths_.weight.begin() + fl.off + fl.len},
                               fl.cap});
    s.flows.push_back(f);
    s.rates.push_back(fl.rate);
  }
  return s;
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
  rebottlenecked_.clear();
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
      if (!saturated || rate_above(x.max_new, link.level) ||
          (x.level >= 0 && rate_above(link.level, x.level)))
        for (FlowIndex g : link.bneck) join(g);
    }
    if (x.level >= 0 && rate_above(link.max_other, x.level)) take_faster(l, x.level, false);
  }
  return region_.size() > before;
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
        const LinkIndex l = paths_.link[fl.off + h];
        links_[l].load += paths_.weight[fl.off + h] * (rate - old);
        if (dirty_mark_[l] != batch) {
          dirty_mark_[l] = batch;
          changed_links_.push_back(l);
        }
      }
    }
    if (fl.bneck != new_bneck_[i]) rebottlenecked_.push_back(f);
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
