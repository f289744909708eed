#pragma once
// Max-min fair sharing for many flows at the cost of few: flows grouped by
// their bottleneck, and progress kept per group.
//
// In a shared fabric most flows are limited by a few links (oversubscribed
// uplinks, a busy NIC), and every flow limited by one link has the same
// rate, its level (sim/maxmin.h). When a flow starts or ends, the level of
// many such links moves, and with it the rate of every flow behind them:
// thousands of rates per event at 100,000 flows. This part keeps those
// flows together, so that a rate change costs one update per group.
//
// Groups. A group is a set of flows that share a bottleneck link b: each
// member crosses b, and the group is rated as one flow of the solver
// (sim/maxmin_incremental.h) whose weight on a link is the sum of its
// members' weights there. Progressive filling raises that flow as it would
// raise each member (they share one rate), so the solver's rates are the
// members' rates, provided the solver also freezes the group at a link all
// its members cross. After each solve a group frozen at a link b that only
// some members cross is split (those members form a new group) and the
// pieces are rated again; a group frozen at b that all members cross is
// valid, and two valid groups frozen at the same link merge (the solver's
// merge: nothing is re-rated). A flow with a rate cap stays alone.
// When every group is valid, every flow crosses a saturated link on which
// no flow is faster (its group's bottleneck: a flow there is in some group
// crossing it, rated no higher), or is at its cap: the rates are the max-min
// fair rates of the flows themselves.
//
// Tracked links. A group carries only its members' tracked links into the
// solver; the others are checked by a bound. An untracked link l with
// capacity C_l and member weights summing to W_l carries at most W_l·r when
// no flow on it is faster than r, so it is within capacity while every
// flow crossing it has rate ≤ θ_l = C_l / W_l. Each group keeps an alarm,
// at most the smallest θ over its members' untracked links (lowered when a
// flow joins such a link); a group rated above its alarm has the offending
// links tracked, and the solve is repeated. A flow that crosses no tracked
// link has its smallest-θ link tracked when it starts. A tracked link that
// is nobody's bottleneck and runs at most half full under the bound is
// dropped again when its flow count has doubled since it was last looked
// at. Rates are therefore feasible on every link, and the solver sees the
// links that may limit someone. The bound is loose where the rates on a
// link differ widely (one fast flow among slow ones trips it), so such
// links are tracked though far from full.
//
// Progress. A group's service s(t) is ∫ rate dt, the bytes each member has
// moved since the group's origin; it is anchored (t0, s0) at its last rate
// change. A member that must have moved F bytes of service to be done
// finishes at t0 + ⌈(F − s0) / rate⌉ (the rounding contract of
// sim/numeric.h); the group keeps its members in a heap by F, so a rate
// change re-anchors one group, not its members, and the network keeps one
// completion timer per group.
//
// Ids are recycled: a flow's once it is removed, a group's once it is empty.

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/units.h"
#include "sim/maxmin.h"
#include "sim/maxmin_incremental.h"

namespace meshsim::sim {

class FlowGroups {
 public:
  using FlowIndex = std::uint32_t;
  using GroupIndex = std::uint32_t;
  using LinkIndex = std::uint32_t;
  static constexpr GroupIndex kNoGroup = UINT32_MAX;

  /// Links with these capacities (bytes per second, each > 0).
  explicit FlowGroups(std::vector<double> capacity);

  /// Tracks every link, so that load() is exact on all of them (for link
  /// timelines). Call before the first add().
  void track_all_links();

  /// A flow of `bytes` over `links` (distinct; weights as in
  /// sim/maxmin.h, empty: all 1; cap 0: none), sharing from `now`. Its
  /// rate is 0 until the next solve().
  FlowIndex add(std::span<const LinkIndex> links, std::span<const double> weights, double cap, double bytes,
                Time now);
  /// Re-rates after the additions and removals at `now`.
  void solve(Time now);
  /// The groups whose completion may have moved in the last solve() (their
  /// rate or members changed; some may be empty now).
  [[nodiscard]] const std::vector<GroupIndex>& touched() const { return touched_; }
  /// When the group's next member is done; Time::max() when it has none.
  [[nodiscard]] Time next_done(GroupIndex g) const;
  /// Removes the group's members that are done at `now` and appends them
  /// to `out`.
  void take_done(GroupIndex g, Time now, std::vector<FlowIndex>& out);

  [[nodiscard]] double rate(FlowIndex f) const { return groups_[flows_[f].group].rate; }
  [[nodiscard]] double group_rate(GroupIndex g) const { return groups_[g].rate; }
  /// Bytes still to move at `now`.
  [[nodiscard]] double remaining(FlowIndex f, Time now) const;
  [[nodiscard]] GroupIndex group_of(FlowIndex f) const { return flows_[f].group; }
  [[nodiscard]] std::size_t active() const { return active_; }
  [[nodiscard]] std::size_t groups() const { return groups_.size() - free_groups_.size(); }
  [[nodiscard]] double capacity(LinkIndex l) const { return links_[l].capacity; }
  [[nodiscard]] std::size_t link_count() const { return links_.size(); }
  /// Σ weight × rate of a tracked link's flows (bytes per second).
  [[nodiscard]] double load(LinkIndex l) const { return solver_.load(l); }
  [[nodiscard]] bool tracked(LinkIndex l) const { return links_[l].tracked; }
  /// The tracked links whose load the last solve() changed.
  [[nodiscard]] const std::vector<LinkIndex>& changed_links() const { return changed_links_; }
  /// The active flows and their rates, for check_max_min (sim/maxmin.h).
  struct Snapshot {
    MaxMinProblem problem;
    std::vector<double> rates;
  };
  [[nodiscard]] Snapshot snapshot() const;

  struct Stats {
    std::uint64_t solves = 0;    // calls of solve()
    std::uint64_t rounds = 0;    // solver solves (a split or a newly tracked link asks for another)
    std::uint64_t regroups = 0;  // group rate or member changes
    std::uint64_t splits = 0;
    std::uint64_t merges = 0;
    std::uint64_t tracks = 0;    // links tracked
    std::uint64_t untracks = 0;  // links dropped
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }
  [[nodiscard]] const IncrementalMaxMin::Stats& solver_stats() const { return solver_.stats(); }

 private:
  static constexpr std::uint32_t kNoSid = UINT32_MAX;
  static constexpr LinkIndex kNoLink = UINT32_MAX;
  struct Flow {
    std::uint32_t off = 0;  // into paths_
    std::uint32_t len = 0;
    std::uint32_t tracked = 0;  // how many of its links are tracked
    double cap = 0;
    double finish = 0;  // its group's service when it is done
    GroupIndex group = kNoGroup;
    std::uint32_t heap_pos = 0;
  };
  struct Link {
    double capacity = 0;
    double wsum = 0;  // Σ weights of the active flows crossing it
    bool tracked = false;
    std::uint32_t looked_at = 1;  // flow count when last considered for dropping
    GroupIndex keyed = kNoGroup;  // the valid group bottlenecked here
    std::uint64_t crowded = 0;    // == solves + 1: in crowded_
    std::vector<PathPool::Entry> flows;
    [[nodiscard]] double theta() const { return capacity / wsum; }
  };
  struct Agg {
    LinkIndex link;
    double weight;
    std::uint32_t count;  // members crossing it
  };
  struct Group {
    std::uint32_t sid = kNoSid;  // its flow in solver_
    double cap = 0;              // a capped flow's group: its cap
    double alarm = 0;            // ≤ θ of every untracked link of a member
    double rate = 0;             // since t0
    double s0 = 0;               // service at t0
    Time t0;
    std::vector<FlowIndex> heap;  // members, a min-heap by finish
    std::vector<Agg> agg;         // the members' tracked links
    LinkIndex key = kNoLink;      // the link it is frozen at, which all members cross (kNoLink: not known)
    bool dirty = false;           // its solver flow is out of date
    std::uint64_t touched = 0;    // == solves + 1: in touched_
  };

  GroupIndex new_group(Time now, double cap);
  void add_member(GroupIndex g, FlowIndex f);
  void drop_member(FlowIndex f);
  void agg_add(GroupIndex g, LinkIndex l, double w, std::uint32_t count);
  void agg_sub(GroupIndex g, LinkIndex l, double w);
  [[nodiscard]] std::uint32_t crossing(GroupIndex g, LinkIndex l) const;
  [[nodiscard]] static double service(const Group& G, Time now);
  void anchor(GroupIndex g, Time now);
  void set_key(GroupIndex g, LinkIndex key);
  void touch(GroupIndex g);
  void open_batch();
  [[nodiscard]] Time done_at(const Group& G, FlowIndex f) const;
  void retire(FlowIndex f);
  void mark_dirty(GroupIndex g);
  void flush();
  void take_rates(Time now);
  bool check_alarms();
  bool split_invalid(Time now);
  void merge_valid(Time now);
  void merge(GroupIndex into, GroupIndex from, Time now);
  void track(LinkIndex l);
  void consider_dropping(LinkIndex l);
  void join_link(FlowIndex f, std::uint32_t hop);
  void lower_alarm(GroupIndex g, double theta);
  void lower_crowded_alarms();
  void heap_up(Group& g, std::uint32_t i);
  void heap_down(Group& g, std::uint32_t i);
  void heap_erase(Group& g, std::uint32_t i);

  IncrementalMaxMin solver_;
  bool track_all_ = false;
  std::vector<Link> links_;
  std::vector<Flow> flows_;
  PathPool paths_;
  std::vector<FlowIndex> free_flows_;
  std::vector<Group> groups_;
  std::vector<GroupIndex> free_groups_;
  std::vector<GroupIndex> owner_;                            // per solver flow: its group
  std::unordered_map<std::uint64_t, std::uint32_t> agg_at_;  // (group, link) → index in agg
  std::size_t active_ = 0;
  std::vector<GroupIndex> dirty_;
  std::vector<GroupIndex> rated_;    // groups the solves of this call re-rated
  std::vector<GroupIndex> alarmed_;  // groups whose alarm fell below their rate
  std::vector<LinkIndex> crowded_;   // untracked links that gained flows
  std::vector<GroupIndex> touched_;
  std::uint64_t batch_ = 0;  // == solves + 1: touched_ lists this batch
  std::vector<LinkIndex> changed_links_;
  std::vector<std::uint64_t> link_changed_;  // == solves + 1: in changed_links_
  std::vector<LinkIndex> scratch_links_;
  std::vector<double> scratch_weights_;
  Stats stats_;
};

}  // namespace meshsim::sim
