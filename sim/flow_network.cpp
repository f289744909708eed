#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "sim/kernel/maxmin.h"
#include "sim/kernel/numeric.h"
#include "sim/kernel/slots.h"

namespace meshsim::sim {

namespace {

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

FlowNetwork::FlowNetwork(kernel::Engine& engine, const topology::Topology& topology)
    : engine_(engine), groups_(capacities(topology)) {
  const std::size_t n = groups_.link_count();
  done_bytes_.assign(n, 0.0);
  link_bytes_.assign(n, 0.0);
}

void FlowNetwork::record_timeline(bool on) {
  if (on == record_) return;
  MESHSIM_ASSERT(on && started_ == 0, "link timelines are recorded from before the first flow");
  record_ = true;
  groups_.track_all_links();
  timeline_.resize(groups_.link_count());
}

FlowId FlowNetwork::start(const topology::Route& route, Bytes size, Notify notify,
                          std::optional<Bandwidth> cap) {
  return start(route.links(), route.latency, size, notify, cap);
}

FlowId FlowNetwork::start(const std::vector<DirLinkId>& path, Time latency, Bytes size, Notify notify,
                          std::optional<Bandwidth> cap, const std::vector<double>& weights) {
  MESHSIM_ASSERT(weights.empty() || weights.size() == path.size(), "one weight per link of the path");
  for (double w : weights) MESHSIM_ASSERT(w > 0 && std::isfinite(w), "link weights must be positive");
  MESHSIM_ASSERT(size.count() >= 0, "a flow cannot have a negative size");
  MESHSIM_ASSERT(latency >= Time::zero(), "a flow cannot have a negative latency");
  for (DirLinkId l : path) MESHSIM_ASSERT(l < groups_.link_count(), "flow path names an unknown link");
  MESHSIM_ASSERT(!cap || cap->bps() > 0, "a flow rate cap must be positive");
  const FlowId id =
      kernel::take_slot(flows_, free_, std::size_t{1} << 30, "more than 2^30 flows in flight in one network");
  Flow& fl = flows_[id];
  fl.path.assign(path.begin(), path.end());  // into the slot's storage
  fl.weights.assign(weights.begin(), weights.end());
  fl.size = static_cast<double>(size.count());
  fl.cap = cap ? static_cast<double>(cap->bps()) / 8.0 : 0.0;
  fl.notify = notify;
  ++started_;
  engine_.schedule(engine_.after(latency), this, (id << 1) | kActivate);
  return id;
}

double FlowNetwork::rate(FlowId f) const {
  return flows_[f].shared == kIdle ? 0.0 : groups_.rate(flows_[f].shared);
}

void FlowNetwork::on_event(Time now, std::uint32_t payload) {
  if (payload == kSolve) {
    solve(now);
    return;
  }
  if ((payload & 1U) == kActivate)
    activate(static_cast<FlowId>(payload >> 1), now);
  else
    complete(payload >> 1, now);
}

void FlowNetwork::activate(FlowId f, Time now) {
  Flow& fl = flows_[f];
  // Nothing to move, or nothing to cross (a copy inside one device): done.
  if (fl.size <= 0 || fl.path.empty()) {
    finish(f, now);
    return;
  }
  fl.shared = groups_.add(fl.path, fl.weights, fl.cap, fl.size, now);
  if (owner_.size() <= fl.shared) owner_.resize(fl.shared + 1);
  owner_[fl.shared] = f;
  request_solve();
}

// Group g's timer: its members done by now finish. (The completion time
// was rounded up: whatever floating-point dust is left belongs to this
// instant.) A timer that a slower rate left early finds none done and is
// set again.
void FlowNetwork::complete(kernel::FlowGroups::GroupIndex g, Time now) {
  group_timer_[g].at = Time::max();  // (it has fired)
  done_.clear();
  groups_.take_done(g, now, done_);
  if (done_.empty()) {
    const Time at = groups_.next_done(g);
    MESHSIM_ASSERT(at > now && at != Time::max(), "a group's early timer leaves a member to finish");
    engine_.set_timer(group_timer_[g].id, at);
    group_timer_[g].at = at;
    return;
  }
  request_solve();
  for (const kernel::FlowGroups::FlowIndex d : done_) {
    const FlowId f = owner_[d];
    flows_[f].shared = kIdle;
    add_bytes(done_bytes_, flows_[f], flows_[f].size);
    add_bytes(link_bytes_, flows_[f], flows_[f].size);
    finish(f, now);
  }
}

void FlowNetwork::add_bytes(std::vector<double>& bytes, const Flow& fl, double moved) const {
  for (std::size_t h = 0; h < fl.path.size(); ++h)
    bytes[fl.path[h]] += moved * (fl.weights.empty() ? 1.0 : fl.weights[h]);
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

void FlowNetwork::repeat_done_bytes(const std::vector<double>& at_start, std::int64_t times) {
  MESHSIM_ASSERT(active_flows() == 0 && at_start.size() == done_bytes_.size(),
                 "a stretch repeats with no flow active");
  const double k = static_cast<double>(times);
  for (std::size_t l = 0; l < done_bytes_.size(); ++l) {
    done_bytes_[l] += k * (done_bytes_[l] - at_start[l]);
    link_bytes_[l] = done_bytes_[l];
  }
}

void FlowNetwork::settle() {
  link_bytes_ = done_bytes_;
  for (const Flow& fl : flows_)
    if (fl.shared != kIdle) add_bytes(link_bytes_, fl, fl.size - groups_.remaining(fl.shared, engine_.now()));
}

// The instant's one solve; then each group whose rate or members changed
// has its completion timer moved.
void FlowNetwork::solve(Time now) {
  solve_pending_ = false;
  groups_.solve(now);
  if (record_)
    for (DirLinkId l : groups_.changed_links()) record_rate(l, now);
  for (const kernel::FlowGroups::GroupIndex g : groups_.touched()) {
    while (group_timer_.size() <= g) {
      const auto next = static_cast<std::uint32_t>(group_timer_.size());
      group_timer_.push_back({engine_.add_timer(this, (next << 1) | kComplete), Time::max()});
    }
    GroupTimer& timer = group_timer_[g];
    const Time at = groups_.next_done(g);
    if (at == Time::max()) {
      if (timer.at != Time::max()) engine_.cancel_timer(timer.id);
      timer.at = Time::max();
      continue;
    }
    if (at < timer.at) {
      engine_.set_timer(timer.id, at);
      timer.at = at;
    }
  }
  if (check_) verify_rates();
}

// Every active flow's rate, checked against the optimality conditions.
void FlowNetwork::verify_rates() const {
  const kernel::BottleneckStructure::Snapshot s = groups_.snapshot();
  if (const auto broken = kernel::check_max_min(s.problem, s.rates))
    MESHSIM_ASSERT(false,
                   fmt::format("rates at {} are not max-min fair: {}", human_string(engine_.now()), *broken));
}

void FlowNetwork::record_rate(DirLinkId l, Time now) {
  auto& tl = timeline_[l];
  const double rate = groups_.load(l);
  if (!tl.empty() && tl.back().bytes_per_second == rate) return;
  if (!tl.empty() && tl.back().at == now) tl.pop_back();
  tl.push_back({now, rate});
}

}  // namespace meshsim::sim
