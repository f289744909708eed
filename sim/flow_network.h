#pragma once
// Flow-level network model.
//
// A flow moves `size` bytes along a route of directed links. It first pays
// the route's latency once (propagation and per-hop overheads, during which
// it uses no bandwidth), then shares every directed link it crosses with
// the other active flows under max-min fairness:
//
//   capacity(l) = bandwidth × count × efficiency        (Link::capacity())
//   rates       = the max-min fair allocation, by progressive filling: raise
//                 all rates together; a flow freezes when a link it crosses
//                 is full or it reaches its own rate cap.
//
// A flow of S bytes alone on a link of capacity C takes latency + S / C;
// two flows sharing it get C/2 each.
//
// A flow may weigh its links: at rate r it uses w_l·r of link l (w = 1 by
// default). Progressive filling then raises each link's level at
// remaining capacity / Σ w of its unfrozen flows. A weighted flow models
// transfers that advance in lockstep, such as the edges of one channel of a
// ring collective (each edge carries w_l·S bytes while the flow moves S):
// alone, it takes latency + S · max_l (w_l / C_l).
//
// Rates change only when a flow becomes active or finishes. All changes at
// one instant are solved once, at the end of the instant (after every
// event at that time, Engine::at_instant_end), by repairing the
// bottleneck structure where the changes reach it
// (sim/kernel/bottleneck_structure.h); flows limited by one link advance as one
// group (sim/kernel/flow_groups.h), so a rate change costs one update per group.
// Each group's next completion is a timer of the engine, moved in place
// when the group's rate or members change, but only ever earlier: a timer
// that a slower rate has left early fires, finds no member done and is
// set again. (On a shared fabric a group's completion moves later about
// half the times it moves, and it moves hundreds of times per completion:
// moving it only earlier halves the timer queue's updates, for about one
// early firing per completion.)
//
// Flow ids are slots: an id is free again when its client is told that the
// flow is done. Slots, paths, groups and timers are recycled, so a run of
// millions of short flows holds memory for the flows in flight only.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/units.h"
#include "sim/kernel/engine.h"
#include "sim/kernel/flow_groups.h"
#include "topology/topology.h"

namespace meshsim::sim {

using FlowId = std::uint32_t;

/// A directed link's total rate from `at` on (bytes per second).
struct RatePoint {
  Time at;
  double bytes_per_second = 0;
};
using topology::DirLinkId;

/// Told when a flow's last byte has arrived.
class FlowClient {
 public:
  /// `tag` is the one given to FlowNetwork::start; `f` may be reused by a
  /// flow started from here on.
  virtual void flow_done(FlowId f, std::uint64_t tag, Time now) = 0;

 protected:
  FlowClient() = default;
  FlowClient(const FlowClient&) = default;
  FlowClient& operator=(const FlowClient&) = default;
  ~FlowClient() = default;
};

/// Whom to tell when a flow is done (no one: client == nullptr).
struct Notify {
  FlowClient* client = nullptr;
  std::uint64_t tag = 0;
};

class FlowNetwork final : public kernel::EventHandler {
 public:
  FlowNetwork(kernel::Engine& engine, const topology::Topology& topology);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;
  ~FlowNetwork() = default;

  /// Starts a flow now along `route`. `cap` limits its rate (e.g. a NIC
  /// queue pair or a copy engine); size 0 completes after the latency.
  FlowId start(const topology::Route& route, Bytes size, Notify notify = {},
               std::optional<Bandwidth> cap = std::nullopt);
  /// Same, with an explicit path of directed links and latency; `weights`
  /// (empty: all 1, else one positive weight per link of `path`) weigh the
  /// links as described above.
  FlowId start(const std::vector<DirLinkId>& path, Time latency, Bytes size, Notify notify = {},
               std::optional<Bandwidth> cap = std::nullopt, const std::vector<double>& weights = {});

  /// Current rate in bytes per second (0 while in latency or finished).
  [[nodiscard]] double rate(FlowId f) const;
  /// Flows started so far, and those now sharing bandwidth.
  [[nodiscard]] std::uint64_t flows_started() const { return started_; }
  [[nodiscard]] std::size_t active_flows() const { return groups_.active(); }
  /// Flow slots ever allocated (the most flows in flight at once).
  [[nodiscard]] std::size_t slots() const { return flows_.size(); }
  /// Bytes carried by each directed link (index: DirLinkId): by the flows
  /// done so far, and by the active ones up to the last settle(), which
  /// brings every link up to now.
  [[nodiscard]] const std::vector<double>& link_bytes() const { return link_bytes_; }
  void settle();
  /// Bytes carried by each directed link by the flows done so far.
  [[nodiscard]] const std::vector<double>& done_bytes() const { return done_bytes_; }
  /// For a run that skips `times` repeats of a stretch it has simulated:
  /// adds `times` × (done_bytes() − at_start) to every link, `at_start`
  /// being done_bytes() when the stretch began. With no flow active only.
  void repeat_done_bytes(const std::vector<double>& at_start, std::int64_t times);
  /// Records every change of each directed link's total rate (for traces).
  /// Before the first flow starts: it makes every link a constraint of the
  /// solver, which costs speed on large fabrics.
  void record_timeline(bool on);
  [[nodiscard]] const std::vector<std::vector<RatePoint>>& timeline() const { return timeline_; }
  /// Checks after every solve that the rates of all active flows are
  /// max-min fair (sim/kernel/maxmin.h's check_max_min); InternalError naming the
  /// broken condition otherwise. A debugging aid: it costs a pass over
  /// every active flow per solve.
  void check_rates(bool on) { check_ = on; }
  /// Capacity of each directed link, bytes per second.
  [[nodiscard]] double link_capacity(DirLinkId l) const { return groups_.capacity(l); }
  /// Counters of the groups (solves: one per instant with a change) and
  /// of the bottleneck structure under them (for benchmarks and tests).
  [[nodiscard]] const kernel::FlowGroups::Stats& group_stats() const { return groups_.stats(); }
  [[nodiscard]] const kernel::BottleneckStructure::Stats& structure_stats() const {
    return groups_.structure_stats();
  }

  void on_event(Time now, std::uint32_t payload) override;

 private:
  enum EventKind : std::uint32_t { kActivate = 0, kComplete = 1 };
  static constexpr std::uint32_t kSolve = UINT32_MAX;  // the end-of-instant call's payload
  static constexpr std::uint32_t kIdle = UINT32_MAX;   // Flow::shared of a flow not sharing bandwidth

  struct Flow {
    std::vector<DirLinkId> path;  // kept (with its capacity) when the slot is reused
    std::vector<double> weights;
    double size = 0;               // bytes
    double cap = 0;                // bytes per second; 0: uncapped
    std::uint32_t shared = kIdle;  // its id in groups_ while it shares bandwidth
    Notify notify;
  };

  void activate(FlowId f, Time now);
  void complete(kernel::FlowGroups::GroupIndex g, Time now);
  void finish(FlowId f, Time now);
  void request_solve();
  void solve(Time now);
  void record_rate(DirLinkId l, Time now);
  void verify_rates() const;
  void add_bytes(std::vector<double>& bytes, const Flow& fl, double moved) const;

  kernel::Engine& engine_;
  kernel::FlowGroups groups_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  std::vector<FlowId> owner_;  // per groups_ flow: the flow slot
  // Per group: the timer of its next completion and when it is set to
  // fire (Time::max() while unset), kept here so that a retiming, which
  // mostly finds its timer already early enough, reads one record.
  struct GroupTimer {
    kernel::Engine::TimerId id;
    Time at;
  };
  std::vector<GroupTimer> group_timer_;
  std::vector<kernel::FlowGroups::FlowIndex> done_;  // complete() scratch
  std::uint64_t started_ = 0;
  bool solve_pending_ = false;
  std::vector<double> done_bytes_;  // per link: carried by the flows done
  std::vector<double> link_bytes_;
  bool record_ = false;
  bool check_ = false;
  std::vector<std::vector<RatePoint>> timeline_;
};

}  // namespace meshsim::sim
