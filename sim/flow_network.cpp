#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "sim/maxmin.h"
#include "sim/numeric.h"

namespace meshsim::sim {

namespace {

// Time to move `bytes` at `rate` bytes/s, under the rounding contract (sim/numeric.h).
Time time_for(double bytes, double rate) {
  return bytes <= 0 ? Time::zero() : duration_up(bytes / rate);
}

}  // namespace

FlowNetwork::FlowNetwork(Engine& engine, const topology::Topology& topology) : engine_(engine) {
  const std::size_t n = 2 * topology.link_count();
  links_.resize(n);
  for (topology::LinkId l = 0; l < topology.link_count(); ++l) {
    const double c = static_cast<double>(topology.link(l).capacity().bps()) / 8.0;
    links_[topology::Topology::directed(l, false)].capacity = c;
    links_[topology::Topology::directed(l, true)].capacity = c;
  }
  link_bytes_.assign(n, 0.0);
  link_dirty_stamp_.assign(n, 0);
  link_seen_.assign(n, 0);
  rem_cap_.assign(n, 0.0);
  unfrozen_.assign(n, 0);
  unfrozen_weight_.assign(n, 0.0);
  link_rate_.assign(n, 0.0);
  link_updated_.assign(n, Time::zero());
}

FlowId FlowNetwork::start(const topology::Route& route, Bytes size, Done on_done,
                          std::optional<Bandwidth> cap) {
  return start(route.links(), route.latency, size, std::move(on_done), cap);
}

FlowId FlowNetwork::start(std::vector<DirLinkId> path, Time latency, Bytes size, Done on_done,
                          std::optional<Bandwidth> cap, const std::vector<double>& weights) {
  MESHSIM_ASSERT(weights.empty() || weights.size() == path.size(), "one weight per link of the path");
  for (double w : weights) MESHSIM_ASSERT(w > 0 && std::isfinite(w), "link weights must be positive");
  MESHSIM_ASSERT(size.count() >= 0, "a flow cannot have a negative size");
  MESHSIM_ASSERT(latency >= Time::zero(), "a flow cannot have a negative latency");
  for (DirLinkId l : path) MESHSIM_ASSERT(l < links_.size(), "flow path names an unknown link");
  MESHSIM_ASSERT(!cap || cap->bps() > 0, "a flow rate cap must be positive");
  MESHSIM_ASSERT(flows_.size() < (std::size_t{1} << 30), "more than 2^30 flows in one network");
  const auto id = static_cast<FlowId>(flows_.size());
  Flow fl;
  MESHSIM_ASSERT(path_pool_.size() + path.size() < (std::size_t{1} << 32), "flow path pool overflow");
  fl.path_off = static_cast<std::uint32_t>(path_pool_.size());
  fl.path_len = static_cast<std::uint32_t>(path.size());
  path_pool_.insert(path_pool_.end(), path.begin(), path.end());
  if (weights.empty())
    weight_pool_.resize(path_pool_.size(), 1.0);
  else
    weight_pool_.insert(weight_pool_.end(), weights.begin(), weights.end());
  slot_pool_.resize(path_pool_.size(), 0);
  fl.remaining = static_cast<double>(size.count());
  fl.cap = cap ? static_cast<double>(cap->bps()) / 8.0 : 0.0;
  fl.start = engine_.now();
  fl.on_done = std::move(on_done);
  flows_.push_back(std::move(fl));
  flow_seen_.push_back(0);
  engine_.schedule(engine_.after(latency), this, (id << 2) | kActivate);
  return id;
}

void FlowNetwork::on_event(Time now, std::uint32_t payload, std::uint32_t version) {
  const auto kind = payload & 3U;
  const auto id = static_cast<FlowId>(payload >> 2);
  switch (kind) {
    case kActivate: activate(id, now); break;
    case kComplete:
      if (flows_[id].version == version && !flows_[id].finished) complete(id, now);
      break;
    case kRecompute: recompute(now); break;
    default: MESHSIM_ASSERT(false, "unknown flow event");
  }
}

void FlowNetwork::activate(FlowId f, Time now) {
  Flow& fl = flows_[f];
  fl.updated = now;
  // Nothing to move, or nothing to cross (a copy inside one device): done.
  if (fl.remaining <= 0 || fl.path_len == 0) {
    finish(f, now);
    return;
  }
  fl.active = true;
  ++active_;
  for (std::uint32_t h = 0; h < fl.path_len; ++h) {
    const DirLinkId l = path_pool_[fl.path_off + h];
    auto& lf = links_[l].flows;
    slot_pool_[fl.path_off + h] = static_cast<std::uint32_t>(lf.size());
    lf.push_back({f, h});
    mark_dirty(l, now);
  }
}

void FlowNetwork::complete(FlowId f, Time now) {
  Flow& fl = flows_[f];
  advance(fl, now);
  // The completion time was rounded up: whatever floating-point dust is
  // left belongs to this instant.
  fl.remaining = 0;
  fl.active = false;
  --active_;
  for (std::uint32_t h = 0; h < fl.path_len; ++h) {
    const DirLinkId l = path_pool_[fl.path_off + h];
    auto& lf = links_[l].flows;
    const std::uint32_t pos = slot_pool_[fl.path_off + h];
    lf[pos] = lf.back();
    slot_pool_[flows_[lf[pos].flow].path_off + lf[pos].hop] = pos;
    lf.pop_back();
    mark_dirty(l, now);
  }
  fl.rate = 0;
  finish(f, now);
}

void FlowNetwork::finish(FlowId f, Time now) {
  Flow& fl = flows_[f];
  fl.finished = true;
  fl.end = now;
  ++fl.version;
  if (fl.on_done) {
    Done cb = std::move(fl.on_done);  // the callback may start flows (reallocating flows_)
    cb(f, now);
  }
}

void FlowNetwork::mark_dirty(DirLinkId l, Time now) {
  if (link_dirty_stamp_[l] != epoch_) {
    link_dirty_stamp_[l] = epoch_;
    dirty_.push_back(l);
  }
  if (!recompute_pending_) {
    recompute_pending_ = true;
    engine_.schedule(now, this, kRecompute);
  }
}

void FlowNetwork::advance(Flow& fl, Time now) {
  const double dt = static_cast<double>((now - fl.updated).count_ps()) / kPsPerSecond;
  if (dt > 0 && fl.rate > 0) fl.remaining -= std::min(fl.remaining, fl.rate * dt);
  fl.updated = now;
}

void FlowNetwork::advance_link(DirLinkId l, Time now) {
  const double dt = static_cast<double>((now - link_updated_[l]).count_ps()) / kPsPerSecond;
  if (dt > 0) link_bytes_[l] += link_rate_[l] * dt;
  link_updated_[l] = now;
}

void FlowNetwork::settle() {
  for (DirLinkId l = 0; l < links_.size(); ++l) advance_link(l, engine_.now());
}

void FlowNetwork::recompute(Time now) {
  recompute_pending_ = false;
  ++recomputations_;
  const std::uint64_t epoch = epoch_++;  // dirty marks of this batch carry `epoch`
  collect_component(epoch);
  rerated_flows_ += comp_flows_.size();
  // Bring byte counts up to now at the old rates.
  for (FlowId f : comp_flows_) advance(flows_[f], now);
  for (DirLinkId l : comp_links_) {
    advance_link(l, now);
    link_rate_[l] = 0;
  }
  old_rate_.resize(comp_flows_.size());
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) old_rate_[i] = flows_[comp_flows_[i]].rate;
  progressive_fill(epoch);
  if (check_) verify_rates();
  if (record_) record_rates(now);
  reschedule_changed();
}

// 1. The component: links whose flow set changed, and everything connected
//    to them through shared flows (comp_links_, comp_flows_).
void FlowNetwork::collect_component(std::uint64_t epoch) {
  std::vector<DirLinkId>& links = comp_links_;
  std::vector<FlowId>& comp = comp_flows_;
  std::vector<DirLinkId>& stack = stack_;
  links.clear();
  comp.clear();
  for (DirLinkId l : dirty_) {
    if (link_seen_[l] == epoch) continue;
    link_seen_[l] = epoch;
    stack.push_back(l);
    while (!stack.empty()) {
      const DirLinkId x = stack.back();
      stack.pop_back();
      links.push_back(x);
      for (const auto& e : links_[x].flows) {
        if (flow_seen_[e.flow] == epoch) continue;
        flow_seen_[e.flow] = epoch;
        comp.push_back(e.flow);
        for (const DirLinkId* y = path_begin(e.flow); y != path_end(e.flow); ++y)
          if (link_seen_[*y] != epoch) {
            link_seen_[*y] = epoch;
            stack.push_back(*y);
          }
      }
    }
  }
  dirty_.clear();
}

namespace {
constexpr std::uint64_t kFlowTag = std::uint64_t{1} << 63;  // heap value: kFlowTag | index into comp
constexpr std::uint64_t kFrozen = std::uint64_t{1} << 62;   // flow_seen_: epoch | kFrozen once frozen
}  // namespace

// Gives f the rate `level` and takes it off its links.
void FlowNetwork::freeze(FlowId f, double level, std::uint64_t epoch) {
  flow_seen_[f] = epoch | kFrozen;
  flows_[f].rate = level;
  const double* w = weight_pool_.data() + flows_[f].path_off;
  for (const DirLinkId* y = path_begin(f); y != path_end(f); ++y, ++w) {
    rem_cap_[*y] = std::max(0.0, rem_cap_[*y] - *w * level);
    --unfrozen_[*y];
    unfrozen_weight_[*y] = unfrozen_[*y] == 0 ? 0.0 : std::max(0.0, unfrozen_weight_[*y] - *w);
    link_rate_[*y] += *w * level;
  }
}

// 2. Progressive filling. A link's fair share is its remaining capacity
//    over the weights of its unfrozen flows; the smallest share (or a
//    smaller flow cap) is the next level at which flows freeze. Freezing a
//    flow at the smallest level never lowers another link's share, so the
//    heap holds lower bounds: a popped link whose share has grown is pushed
//    back with its current share (lazy update) instead of being re-pushed
//    at every freeze.
void FlowNetwork::progressive_fill(std::uint64_t epoch) {
  const std::vector<FlowId>& comp = comp_flows_;
  RadixHeap<std::uint64_t>& heap = heap_;  // value: link id, or kFlowTag | index into comp
  heap.clear();
  for (DirLinkId l : comp_links_) {
    rem_cap_[l] = links_[l].capacity;
    unfrozen_[l] = static_cast<std::uint32_t>(links_[l].flows.size());
    double w = 0;
    for (const auto& e : links_[l].flows) w += weight_pool_[flows_[e.flow].path_off + e.hop];
    unfrozen_weight_[l] = w;
    if (unfrozen_[l] > 0) heap.push(rem_cap_[l] / w, l);
  }
  for (std::size_t i = 0; i < comp.size(); ++i)
    if (flows_[comp[i]].cap > 0) heap.push(flows_[comp[i]].cap, kFlowTag | i);
  std::size_t left = comp.size();
  while (left > 0 && !heap.empty()) {
    const auto [key, tag] = heap.pop();
    ++heap_pops_;
    if ((tag & kFlowTag) != 0) {
      const FlowId f = comp[tag & ~kFlowTag];
      if (flow_seen_[f] != epoch) continue;  // already frozen
      freeze(f, key, epoch);
      --left;
      continue;
    }
    const auto l = static_cast<DirLinkId>(tag);
    if (unfrozen_[l] == 0) continue;  // all its flows froze elsewhere
    const double share = rem_cap_[l] / unfrozen_weight_[l];
    if (share > key * (1 + kStaleShare)) {
      heap.push(share, l);  // grew since pushed: not the minimum yet
      continue;
    }
    for (std::size_t k = 0; k < links_[l].flows.size(); ++k) {
      const FlowId f = links_[l].flows[k].flow;
      if (flow_seen_[f] != epoch) continue;
      freeze(f, share, epoch);
      --left;
    }
  }
  MESHSIM_ASSERT(left == 0, "progressive filling left flows without a rate");
}

// The component as a max-min problem (its links renumbered from 0), and
// its new rates checked against the optimality conditions.
void FlowNetwork::verify_rates() const {
  MaxMinProblem p;
  std::unordered_map<DirLinkId, std::uint32_t> local;
  for (DirLinkId l : comp_links_) {
    local.emplace(l, static_cast<std::uint32_t>(p.capacity.size()));
    p.capacity.push_back(links_[l].capacity);
  }
  std::vector<double> rates;
  for (FlowId f : comp_flows_) {
    MaxMinFlow mf;
    const double* w = weight_pool_.data() + flows_[f].path_off;
    for (const DirLinkId* y = path_begin(f); y != path_end(f); ++y, ++w) {
      mf.links.push_back(local.at(*y));
      mf.weights.push_back(*w);
    }
    mf.cap = flows_[f].cap;
    p.flows.push_back(std::move(mf));
    rates.push_back(flows_[f].rate);
  }
  if (const auto broken = check_max_min(p, rates))
    MESHSIM_ASSERT(false,
                   fmt::format("rates at {} are not max-min fair: {}", human_string(engine_.now()), *broken));
}

void FlowNetwork::record_rates(Time now) {
  for (DirLinkId l : comp_links_) {
    auto& tl = timeline_[l];
    if (tl.empty() || tl.back().bytes_per_second != link_rate_[l]) {
      if (!tl.empty() && tl.back().at == now) tl.pop_back();
      tl.push_back({now, link_rate_[l]});
    }
  }
}

// 3. New completion events for the flows whose rate changed; a flow with
//    the same rate keeps its pending event (its end time is unchanged).
void FlowNetwork::reschedule_changed() {
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const FlowId f = comp_flows_[i];
    Flow& fl = flows_[f];
    MESHSIM_ASSERT(fl.rate > 0, "an active flow got no bandwidth (a zero-capacity link?)");
    // Unchanged up to floating-point noise from the freezing order
    // (sim/numeric.h): keep the old rate and its pending completion event.
    if (same_rate(fl.rate, old_rate_[i])) {
      fl.rate = old_rate_[i];
      continue;
    }
    ++fl.version;
    engine_.schedule(engine_.after(time_for(fl.remaining, fl.rate)), this, (f << 2) | kComplete, fl.version);
  }
}

}  // namespace meshsim::sim
