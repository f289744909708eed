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
// one instant are batched into one recomputation, restricted to the flows
// connected (through shared links) to a link whose set of flows changed.
// Each flow's completion event carries the flow's version; a rate change
// bumps the version and schedules a new event, so stale completions are
// dropped when they come due, never searched for in the queue.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/units.h"
#include "sim/engine.h"
#include "sim/radix_heap.h"
#include "topology/topology.h"

namespace meshsim::sim {

using FlowId = std::uint32_t;

/// A directed link's total rate from `at` on (bytes per second).
struct RatePoint {
  Time at;
  double bytes_per_second = 0;
};
using topology::DirLinkId;

class FlowNetwork final : public EventHandler {
 public:
  /// Called once per flow when its last byte arrives.
  using Done = std::function<void(FlowId, Time)>;

  FlowNetwork(Engine& engine, const topology::Topology& topology);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;
  ~FlowNetwork() = default;

  /// Starts a flow now along `route`. `cap` limits its rate (e.g. a NIC
  /// queue pair or a copy engine); size 0 completes after the latency.
  FlowId start(const topology::Route& route, Bytes size, Done on_done = {},
               std::optional<Bandwidth> cap = std::nullopt);
  /// Same, with an explicit path of directed links and latency; `weights`
  /// (empty: all 1, else one positive weight per link of `path`) weigh the
  /// links as described above.
  FlowId start(std::vector<DirLinkId> path, Time latency, Bytes size, Done on_done = {},
               std::optional<Bandwidth> cap = std::nullopt, const std::vector<double>& weights = {});

  [[nodiscard]] bool finished(FlowId f) const { return flows_[f].finished; }
  [[nodiscard]] Time start_time(FlowId f) const { return flows_[f].start; }
  [[nodiscard]] Time end_time(FlowId f) const { return flows_[f].end; }
  /// Current rate in bytes per second (0 while in latency or finished).
  [[nodiscard]] double rate(FlowId f) const { return flows_[f].rate; }
  [[nodiscard]] std::size_t flow_count() const { return flows_.size(); }
  [[nodiscard]] std::size_t active_flows() const { return active_; }
  /// Bytes carried so far by each directed link (index: DirLinkId), up to
  /// the link's last rate change; settle() brings every link up to now.
  [[nodiscard]] const std::vector<double>& link_bytes() const { return link_bytes_; }
  void settle();
  /// Records every change of each directed link's total rate (for traces).
  void record_timeline(bool on) {
    record_ = on;
    if (on) timeline_.resize(links_.size());
  }
  [[nodiscard]] const std::vector<std::vector<RatePoint>>& timeline() const { return timeline_; }
  /// Checks after every rate computation that the component's rates are
  /// max-min fair (sim/maxmin.h's check_max_min); InternalError naming the
  /// broken condition otherwise. A debugging aid: it costs a pass over the
  /// component per solve.
  void check_rates(bool on) { check_ = on; }
  /// Capacity of each directed link, bytes per second.
  [[nodiscard]] double link_capacity(DirLinkId l) const { return links_[l].capacity; }
  /// Number of rate recomputations so far, the flows they re-rated and the
  /// heap entries they popped (for benchmarks and tests).
  [[nodiscard]] std::uint64_t recomputations() const { return recomputations_; }
  [[nodiscard]] std::uint64_t rerated_flows() const { return rerated_flows_; }
  [[nodiscard]] std::uint64_t heap_pops() const { return heap_pops_; }

  void on_event(Time now, std::uint32_t payload, std::uint32_t version) override;

 private:
  enum EventKind : std::uint32_t { kActivate = 0, kComplete = 1, kRecompute = 2 };

  // Per-flow state. The path and each hop's position in its link's flow
  // list live in two flat pools (path_pool_, slot_pool_) at path_off, so
  // the recomputation walks contiguous memory.
  struct Flow {
    std::uint32_t path_off = 0;
    std::uint32_t path_len = 0;
    double remaining = 0;  // bytes left at `updated`
    double rate = 0;       // bytes per second
    double cap = 0;        // 0: uncapped
    Time updated;
    Time start;
    Time end;
    std::uint32_t version = 0;  // compared for equality only: wrap-around is harmless
    bool active = false;
    bool finished = false;
    Done on_done;
  };
  struct LinkState {
    double capacity = 0;  // bytes per second
    struct Entry {
      FlowId flow;
      std::uint32_t hop;
    };
    std::vector<Entry> flows;  // active flows crossing this link
  };

  void activate(FlowId f, Time now);
  void complete(FlowId f, Time now);
  void finish(FlowId f, Time now);
  void mark_dirty(DirLinkId l, Time now);
  void recompute(Time now);
  // The steps of recompute (flow_network.cpp says what each does).
  void collect_component(std::uint64_t epoch);
  void progressive_fill(std::uint64_t epoch);
  void freeze(FlowId f, double level, std::uint64_t epoch);
  void record_rates(Time now);
  void verify_rates() const;
  void reschedule_changed();
  void advance(Flow& fl, Time now);
  void advance_link(DirLinkId l, Time now);

  [[nodiscard]] const DirLinkId* path_begin(FlowId f) const { return path_pool_.data() + flows_[f].path_off; }
  [[nodiscard]] const DirLinkId* path_end(FlowId f) const {
    return path_pool_.data() + flows_[f].path_off + flows_[f].path_len;
  }

  Engine& engine_;
  std::vector<Flow> flows_;
  std::vector<DirLinkId> path_pool_;
  std::vector<double> weight_pool_;  // per path entry: the link's weight
  std::vector<std::uint32_t> slot_pool_;
  std::vector<LinkState> links_;
  std::vector<double> link_bytes_;
  std::size_t active_ = 0;
  std::uint64_t recomputations_ = 0;
  std::uint64_t rerated_flows_ = 0;
  std::uint64_t heap_pops_ = 0;

  // Recomputation scratch space, stamped by epoch to avoid clearing.
  std::vector<DirLinkId> dirty_;
  std::vector<std::uint64_t> link_dirty_stamp_;
  bool recompute_pending_ = false;
  std::uint64_t epoch_ = 1;
  std::vector<std::uint64_t> link_seen_;
  std::vector<std::uint64_t> flow_seen_;
  std::vector<double> rem_cap_;
  RadixHeap<std::uint64_t> heap_;
  std::vector<DirLinkId> comp_links_;
  std::vector<FlowId> comp_flows_;
  std::vector<DirLinkId> stack_;
  std::vector<double> old_rate_;
  std::vector<std::uint32_t> unfrozen_;
  std::vector<double> unfrozen_weight_;  // Σ weights of a link's unfrozen flows
  std::vector<double> link_rate_;        // Σ rates of the link's flows, bytes/s
  std::vector<Time> link_updated_;       // link_bytes_ is exact up to here
  bool record_ = false;
  bool check_ = false;
  std::vector<std::vector<RatePoint>> timeline_;
};

}  // namespace meshsim::sim
