#pragma once
// Max-min fair rates kept up to date as flows come and go.
//
// The rates are those of sim/maxmin.h (its problem, its bottleneck
// condition); this part keeps them for a changing set of flows and, after a
// batch of additions and removals, re-rates only the flows whose rate can
// change. In a shared fabric every active flow is in one connected
// component, so re-solving the component (what a selective update such as
// SimGrid's does) costs O(F·p) per change; most changes move a few hundred
// rates out of thousands.
//
// What is kept. Each flow's rate r_f and bottleneck b_f: the link where it
// froze in the last filling that rated it (or its cap). Per link: the load
// Σ w·r, the list of flows bottlenecked there (they share one rate, the
// link's level), and an upper bound on the rates of its other flows.
//
// Localised repair. After a batch, a region R of flows is re-rated by
// progressive filling with the other flows held fixed: a link's capacity
// in that filling is C_l minus what fixed flows use of it. R starts as the
// new flows and the flows bottlenecked on any link whose flow set changed.
// The result is then checked against the bottleneck condition on every
// link l that a flow of R crosses, which is only where it can break
// (elsewhere nothing changed):
//   (A) fixed flows bottlenecked at l need l still saturated and no flow
//       of R faster than them on l, and, when R flows froze at l at level
//       t, their own rate not above t;
//   (B) when R flows froze at l at level t, no fixed flow crossing l may be
//       faster than t (the stored bound skips the scan of l's flows when
//       it cannot be).
// Most breaks are caught while R is being filled, in level order, and the
// breaking flows join that same filling: a fixed flow g of rate r_g joins
// at the current level t ≤ r_g as if it had been in R from the start,
// which is exact when none of g's links has filled yet (below t it would
// have used less of them than its fixed rate did). (B) is caught when l
// comes up to fill; (A) by a watch entry at the rate of l's fixed
// bottlenecked flows, which lets them in if R may change what l carries.
// Flows that cannot join midway, and breaks found by the check after the
// filling, start another filling with R grown.
// When no flow breaks (A) or (B), every flow has a bottleneck — a
// saturated link on which it is fastest — or is at its cap: the rates are
// the unique max-min fair rates, the same as a filling of everything would
// give (to floating-point rounding, sim/numeric.h's kRateTolerance). R
// only grows, so the repair ends; past kMaxRounds fillings, or once R holds
// half the active flows, the connected component of the changed links is
// filled instead.
//
// Cost: O(Σ_{f∈R} p_f · log) per filling (about one per batch), plus scans
// of links whose level fell below the bound of their other flows.
//
// Flow ids are recycled: an id is free again once its flow is removed.
// The filling itself is in maxmin_fill.cpp.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sim/maxmin.h"
#include "sim/path_pool.h"
#include "sim/radix_heap.h"

namespace meshsim::sim {

class IncrementalMaxMin {
 public:
  using FlowIndex = std::uint32_t;
  using LinkIndex = std::uint32_t;
  /// Fillings of a region before the component is filled instead.
  static constexpr int kMaxRounds = 16;

  /// Links with these capacities (each > 0).
  explicit IncrementalMaxMin(std::vector<double> capacity);

  /// Adds a flow over `links` (distinct), weighted by `weights` (empty: all
  /// 1), capped at `cap` (0: none). Its rate is 0 until the next solve().
  FlowIndex add(std::span<const LinkIndex> links, std::span<const double> weights, double cap);
  /// Removes a flow; its id may be handed out again by add().
  void remove(FlowIndex f);
  /// Re-rates after the additions and removals since the last solve.
  void solve();
  /// Folds flow `from` into flow `into`, which then crosses the links of
  /// both with the weights of both added: what two flows of one rate do
  /// together. Both are rated, uncapped and bottlenecked at the same link,
  /// so the rates stay max-min fair; nothing is re-rated and `into` keeps
  /// its rate. `from`'s id may be handed out again by add().
  void merge(FlowIndex into, FlowIndex from);

  struct Change {
    FlowIndex flow;
    double old_rate;  // the flow's new rate is rate(flow)
  };
  /// The flows whose rate the last solve() changed (new flows included).
  [[nodiscard]] const std::vector<Change>& changed() const { return changed_; }
  /// The links whose load the last batch changed (its additions, removals
  /// and re-rated flows).
  [[nodiscard]] const std::vector<LinkIndex>& changed_links() const { return changed_links_; }

  [[nodiscard]] double rate(FlowIndex f) const { return flows_[f].rate; }
  /// Where a flow froze in the filling that last rated it: a link, kAtCap,
  /// or kUnrated (added since the last solve).
  static constexpr std::uint32_t kUnrated = UINT32_MAX;
  static constexpr std::uint32_t kAtCap = UINT32_MAX - 1;
  [[nodiscard]] std::uint32_t bottleneck(FlowIndex f) const { return flows_[f].bneck; }
  /// The flows whose bottleneck the last solve() changed (new flows included).
  [[nodiscard]] const std::vector<FlowIndex>& rebottlenecked() const { return rebottlenecked_; }
  /// Σ weight × rate of the link's flows (bytes per second).
  [[nodiscard]] double load(LinkIndex l) const { return links_[l].load; }
  [[nodiscard]] double capacity(LinkIndex l) const { return links_[l].capacity; }
  [[nodiscard]] std::size_t link_count() const { return links_.size(); }
  [[nodiscard]] std::size_t active() const { return active_; }
  /// The active flows as a MaxMinProblem over all links (sim/maxmin.h),
  /// with their ids and current rates in the same order: what checks
  /// compare against max_min_rates and check_max_min.
  struct Snapshot {
    MaxMinProblem problem;
    std::vector<FlowIndex> flows;
    std::vector<double> rates;
  };
  [[nodiscard]] Snapshot snapshot() const;

  struct Stats {
    std::uint64_t solves = 0;
    std::uint64_t rounds = 0;     // fillings, over all solves
    std::uint64_t rerated = 0;    // flows in the filled regions, over all fillings
    std::uint64_t scans = 0;      // links whose flow list check (B) scanned
    std::uint64_t fallbacks = 0;  // solves that filled the whole component
    std::uint64_t changed = 0;    // rates changed
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  static constexpr std::uint32_t kNone = kUnrated;  // b_f: not rated yet
  static constexpr std::uint32_t kCap = kAtCap;     // b_f: at its cap

  struct Flow {
    std::uint32_t off = 0;  // into paths_
    std::uint32_t len = 0;
    double rate = 0;
    double cap = 0;
    std::uint32_t bneck = kNone;
    std::uint32_t bneck_slot = 0;  // position in links_[bneck].bneck
    bool active = false;
  };
  struct Link {
    double capacity = 0;
    double load = 0;
    double level = 0;      // rate of the flows bottlenecked here
    double max_other = 0;  // ≥ the rate of every flow here bottlenecked elsewhere
    std::vector<PathPool::Entry> flows;
    std::vector<FlowIndex> bneck;
  };
  // Scratch of one filling, per link of the region.
  struct RegionLink {
    double rem = 0;                                           // capacity left for the region
    double wsum = 0;                                          // Σ weights of unfrozen region flows
    double old_use = 0;                                       // Σ w·r_old of region flows
    double new_use = 0;                                       // Σ w·r_new of region flows
    double max_new = 0;                                       // largest new rate of a region flow
    double level = -1;                                        // rate of region flows frozen here; < 0: none
    double frozen_old = 0;                                    // Σ w·r_old of its frozen region flows
    double queued = std::numeric_limits<double>::infinity();  // key of its live heap entry
    bool watched = false;                                     // its watch entry has come up
    std::uint32_t unfrozen = 0;
    std::uint32_t begin = 0;  // region flows crossing it: members_[begin, end)
    std::uint32_t end = 0;
    std::uint32_t extra = kNoExtra;  // flows that joined mid-filling: extras_ chain
  };
  static constexpr std::uint32_t kNoExtra = UINT32_MAX;
  struct Extra {
    std::uint32_t member;  // region position
    std::uint32_t next;
  };

  void seed();
  void mark_dirty(LinkIndex l);
  void collect_component();
  void gather();
  void fill();
  void fill_link(std::uint32_t j, double key);
  void watch(std::uint32_t j, double level);
  [[nodiscard]] bool carries_change(std::uint32_t j) const;
  [[nodiscard]] std::ptrdiff_t pending_watches() const;
  bool admit_faster(std::uint32_t j, double level);
  bool admit(FlowIndex g, double level);
  void add_region_link(LinkIndex m, double level);
  void freeze(std::uint32_t r, double level, std::uint32_t bneck);
  bool check();
  bool take_faster(LinkIndex l, double level, bool now);
  void queue(std::uint32_t j, double share);
  void queue_watch(std::uint32_t j, double level);
  [[nodiscard]] std::span<const LinkIndex> links_of(FlowIndex f) const {
    return {paths_.link.data() + flows_[f].off, flows_[f].len};
  }
  void apply();
  void set_bneck(FlowIndex f, std::uint32_t b);
  void join(FlowIndex f);
  void attach(FlowIndex f, std::span<const LinkIndex> links, std::span<const double> weights);
  void detach(FlowIndex f);

  std::vector<Link> links_;
  std::vector<Flow> flows_;
  PathPool paths_;
  std::vector<FlowIndex> free_flows_;
  std::size_t active_ = 0;
  std::vector<LinkIndex> dirty_;
  std::vector<FlowIndex> added_;
  std::vector<Change> changed_;
  std::vector<FlowIndex> rebottlenecked_;
  std::vector<LinkIndex> merged_links_;  // merge() scratch
  std::vector<double> merged_weights_;
  std::vector<LinkIndex> changed_links_;
  Stats stats_;

  // Region scratch, stamped to avoid clearing.
  std::uint64_t epoch_ = 1;
  std::vector<std::uint64_t> flow_mark_;   // == epoch_: in the region
  std::vector<std::uint64_t> link_mark_;   // == round stamp: in this filling's links
  std::vector<std::uint64_t> dirty_mark_;  // == solves + 1: in dirty_ or changed_links_
  std::uint64_t round_ = 1;
  std::vector<FlowIndex> region_;
  std::vector<double> new_rate_;          // per region position
  std::vector<std::uint32_t> new_bneck_;  // per region position
  std::vector<std::uint32_t> local_;      // per link: index into region_links_
  std::vector<LinkIndex> region_links_;
  std::vector<RegionLink> rl_;
  std::vector<std::uint32_t> members_;  // region positions, grouped by link
  std::vector<Extra> extras_;
  std::vector<std::uint32_t> watched_;  // region links with a watch entry
  std::vector<FlowIndex> deferred_;     // to join the next filling
  std::size_t left_ = 0;                // region flows not frozen yet
  RadixHeap<std::uint64_t> heap_;
};

}  // namespace meshsim::sim
