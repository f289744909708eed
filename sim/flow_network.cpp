#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>

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

// Each directed link's capacity in bytes per second.
std::vector<double> capacities(const topology::Topology& t) {
  std::vector<double> c(2 * t.link_count());
  for (topology::LinkId l = 0; l < t.link_count(); ++l) {
    const double bps = static_cast<double>(t.link(l).capacity().bps()) / 8.0;
    c[topology::Topology::directed(l, false)] = bps;
    c[topology::Topology::directed(l, true)] = bps;
  }
  return c;
}

}  // namespace

FlowNetwork::FlowNetwork(Engine& engine, const topology::Topology& topology)
    : engine_(engine), solver_(capacities(topology)) {
  const std::size_t n = solver_.link_count();
  link_bytes_.assign(n, 0.0);
  link_rate_.assign(n, 0.0);
  link_updated_.assign(n, Time::zero());
}

FlowId FlowNetwork::start(const topology::Route& route, Bytes size, Notify notify,
                          std::optional<Bandwidth> cap) {
  return start(route.links(), route.latency, size, notify, cap);
}

FlowId FlowNetwork::start(std::vector<DirLinkId> path, Time latency, Bytes size, Notify notify,
                          std::optional<Bandwidth> cap, const std::vector<double>& weights) {
  MESHSIM_ASSERT(weights.empty() || weights.size() == path.size(), "one weight per link of the path");
  for (double w : weights) MESHSIM_ASSERT(w > 0 && std::isfinite(w), "link weights must be positive");
  MESHSIM_ASSERT(size.count() >= 0, "a flow cannot have a negative size");
  MESHSIM_ASSERT(latency >= Time::zero(), "a flow cannot have a negative latency");
  for (DirLinkId l : path) MESHSIM_ASSERT(l < link_rate_.size(), "flow path names an unknown link");
  MESHSIM_ASSERT(!cap || cap->bps() > 0, "a flow rate cap must be positive");
  FlowId id = 0;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    MESHSIM_ASSERT(flows_.size() < (std::size_t{1} << 30), "more than 2^30 flows in flight in one network");
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
    flows_.back().timer = engine_.add_timer(this, (id << 1) | kComplete);
  }
  Flow& fl = flows_[id];
  fl.path = std::move(path);
  fl.weights.assign(weights.begin(), weights.end());
  fl.remaining = static_cast<double>(size.count());
  fl.cap = cap ? static_cast<double>(cap->bps()) / 8.0 : 0.0;
  fl.notify = notify;
  ++started_;
  engine_.schedule(engine_.after(latency), this, (id << 1) | kActivate);
  return id;
}

double FlowNetwork::rate(FlowId f) const {
  return flows_[f].solver == kIdle ? 0.0 : solver_.rate(flows_[f].solver);
}

void FlowNetwork::on_event(Time now, std::uint32_t payload, std::uint32_t /*version*/) {
  if (payload == kSolve) {
    solve(now);
    return;
  }
  const auto id = static_cast<FlowId>(payload >> 1);
  if ((payload & 1U) == kActivate)
    activate(id, now);
  else
    complete(id, now);
}

void FlowNetwork::activate(FlowId f, Time now) {
  Flow& fl = flows_[f];
  fl.updated = now;
  // Nothing to move, or nothing to cross (a copy inside one device): done.
  if (fl.remaining <= 0 || fl.path.empty()) {
    finish(f, now);
    return;
  }
  fl.solver = solver_.add(fl.path, fl.weights, fl.cap);
  if (owner_.size() <= fl.solver) owner_.resize(fl.solver + 1);
  owner_[fl.solver] = f;
  request_solve();
}

void FlowNetwork::complete(FlowId f, Time now) {
  Flow& fl = flows_[f];
  // The completion time was rounded up: whatever floating-point dust is
  // left belongs to this instant.
  fl.remaining = 0;
  solver_.remove(fl.solver);
  fl.solver = kIdle;
  request_solve();
  finish(f, now);
}

void FlowNetwork::finish(FlowId f, Time now) {
  const Notify notify = flows_[f].notify;
  free_.push_back(f);
  if (notify.client != nullptr) notify.client->flow_done(f, notify.tag, now);
}

void FlowNetwork::request_solve() {
  if (solve_pending_) return;
  solve_pending_ = true;
  engine_.at_instant_end(this, kSolve);
}

void FlowNetwork::advance_link(DirLinkId l, Time now) {
  const double dt = static_cast<double>((now - link_updated_[l]).count_ps()) / kPsPerSecond;
  if (dt > 0) link_bytes_[l] += link_rate_[l] * dt;
  link_updated_[l] = now;
}

void FlowNetwork::settle() {
  for (DirLinkId l = 0; l < link_rate_.size(); ++l) advance_link(l, engine_.now());
}

// The instant's one solve: links carry their old rates up to now, then the
// flows whose rate changed get their bytes brought up to now at the old
// rate and their completion moved.
void FlowNetwork::solve(Time now) {
  solve_pending_ = false;
  solver_.solve();
  for (DirLinkId l : solver_.changed_links()) {
    advance_link(l, now);
    link_rate_[l] = solver_.load(l);
    if (record_) record_rate(l, now);
  }
  for (const auto& [sid, old_rate] : solver_.changed()) {
    Flow& fl = flows_[owner_[sid]];
    const double dt = static_cast<double>((now - fl.updated).count_ps()) / kPsPerSecond;
    if (dt > 0 && old_rate > 0) fl.remaining -= std::min(fl.remaining, old_rate * dt);
    fl.updated = now;
    const double r = solver_.rate(sid);
    MESHSIM_ASSERT(r > 0, "an active flow got no bandwidth (a zero-capacity link?)");
    engine_.set_timer(fl.timer, engine_.after(time_for(fl.remaining, r)));
  }
  if (check_) verify_rates();
}

// Every active flow's rate, checked against the optimality conditions.
void FlowNetwork::verify_rates() const {
  const IncrementalMaxMin::Snapshot s = solver_.snapshot();
  if (const auto broken = check_max_min(s.problem, s.rates))
    MESHSIM_ASSERT(false,
                   fmt::format("rates at {} are not max-min fair: {}", human_string(engine_.now()), *broken));
}

void FlowNetwork::record_rate(DirLinkId l, Time now) {
  auto& tl = timeline_[l];
  if (!tl.empty() && tl.back().bytes_per_second == link_rate_[l]) return;
  if (!tl.empty() && tl.back().at == now) tl.pop_back();
  tl.push_back({now, link_rate_[l]});
}

}  // namespace meshsim::sim
