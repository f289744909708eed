#pragma once
// Progress of many flows at the cost of few: flows grouped by the link
// that limits them.
//
// The rates come from the bottleneck structure (sim/kernel/bottleneck_structure.h):
// every flow limited by link b runs at b's level λ_b. A group is the set
// of flows limited by one link (or one flow at its cap), and its rate is
// that link's level, so a level change costs one update per group, not
// per flow, and the network keeps one completion timer per group.
//
// Service. A group's service s(t) is ∫ λ_b dt: the bytes each member has
// moved while in the group, anchored (t0, s0) at its last rate change. A
// member that must move R more bytes when it joins at time t has finish
// point F = s(t) + R; it is done at t0 + ⌈(F − s0) / λ_b⌉ (the rounding
// contract of sim/kernel/numeric.h), and the group keeps its members in a
// binary heap by F (sim/kernel/heap.h), each entry with a copy of its F
// (a sift compares entries it holds, not flows' records all over
// memory). A flow whose bottleneck moves takes its remaining bytes
// F − s_old(t) to the new group. A rate change re-anchors the group; no
// member is touched.
//
// Ids are the structure's: a flow's once it is removed; a group's is its
// link's.

#include <cstdint>
#include <span>
#include <vector>

#include "core/units.h"
#include "sim/kernel/bottleneck_structure.h"
#include "sim/kernel/heap.h"
#include "sim/kernel/maxmin.h"
#include "sim/kernel/numeric.h"

namespace meshsim::sim::kernel {

class FlowGroups {
 public:
  using FlowIndex = BottleneckStructure::FlowIndex;
  using GroupIndex = BottleneckStructure::LinkIndex;
  using LinkIndex = BottleneckStructure::LinkIndex;

  /// Links with these capacities (bytes per second, each > 0).
  explicit FlowGroups(const std::vector<double>& capacity);

  /// Keeps every link in the structure, so that load() is exact on all of
  /// them (for link timelines). Call before the first add().
  void track_all_links() { structure_.keep_all_links(); }

  /// A flow of `bytes` over `links` (distinct; weights as in
  /// sim/kernel/maxmin.h, empty: all 1; cap 0: none), sharing from `now`. It
  /// joins its group at the next solve().
  FlowIndex add(std::span<const LinkIndex> links, std::span<const double> weights, double cap, double bytes,
                Time now);
  /// Re-rates after the additions and removals at `now`.
  void solve(Time now);
  /// The groups whose next completion may have moved in the last solve()
  /// or since the one before (their rate or members changed, members taken
  /// by take_done included; some may be empty now).
  [[nodiscard]] const std::vector<GroupIndex>& touched() const { return touched_; }
  /// When the group's next member is done; Time::max() when it has none.
  /// (Inline, with done_at: the network asks it of every group retimed.)
  [[nodiscard]] Time next_done(GroupIndex g) const {
    if (g >= groups_.size()) return Time::max();
    const Group& G = groups_[g];
    return G.heap.empty() ? Time::max() : done_at(G, G.front);
  }
  /// Removes the group's members that are done at `now` and appends them
  /// to `out`.
  void take_done(GroupIndex g, Time now, std::vector<FlowIndex>& out);

  [[nodiscard]] double rate(FlowIndex f) const { return structure_.rate(f); }
  /// Bytes still to move at `now`.
  [[nodiscard]] double remaining(FlowIndex f, Time now) const;
  [[nodiscard]] GroupIndex group_of(FlowIndex f) const { return flows_[f].group; }
  [[nodiscard]] std::size_t active() const { return structure_.active(); }
  [[nodiscard]] double capacity(LinkIndex l) const { return structure_.capacity(l); }
  [[nodiscard]] std::size_t link_count() const { return structure_.link_count(); }
  /// Σ weight × rate of the link's flows (bytes per second); exact on
  /// every link after track_all_links().
  [[nodiscard]] double load(LinkIndex l) const { return structure_.load(l); }
  /// The network links whose load the last solve() may have changed.
  [[nodiscard]] const std::vector<LinkIndex>& changed_links() const { return structure_.touched_links(); }
  [[nodiscard]] BottleneckStructure::Snapshot snapshot() const { return structure_.snapshot(); }

  struct Stats {
    std::uint64_t solves = 0;
    std::uint64_t retimed = 0;  // groups whose rate or members changed, over all solves
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }
  [[nodiscard]] const BottleneckStructure::Stats& structure_stats() const { return structure_.stats(); }
  [[nodiscard]] const BottleneckStructure& structure() const { return structure_; }

 private:
  static constexpr GroupIndex kNoGroup = UINT32_MAX;
  struct Flow {
    double finish = 0;  // its group's service when it is done; before it joins one: its bytes
    GroupIndex group = kNoGroup;
    std::uint32_t heap_pos = 0;
  };
  // A member as its group's heap keeps it: its finish (a copy of its
  // Flow's) and its id.
  struct Member {
    double finish;
    FlowIndex flow;
  };
  // One cache line: a retiming reads and writes most of it.
  struct alignas(64) Group {
    double rate = 0;  // since t0
    double s0 = 0;    // service at t0
    Time t0;
    std::vector<Member> heap;   // a min-heap by finish
    double front = 0;           // the first member's finish (kept here: read at every retiming)
    std::uint64_t touched = 0;  // == solves + 1: in touched_
  };
  static_assert(sizeof(Group) == 64, "a group's record is one cache line");

  [[nodiscard]] static double service(const Group& G, Time now);
  // When a member of G that is done at service `finish` is done.
  [[nodiscard]] static Time done_at(const Group& G, double finish) {
    if (G.rate <= 0) return Time::max();
    const double left = finish - G.s0;
    return G.t0 + (left <= 0 ? Time::zero() : duration_up(left / G.rate));
  }
  static void refront(Group& G) { G.front = G.heap.empty() ? 0.0 : G.heap.front().finish; }
  Group& group(GroupIndex g);
  void anchor(Group& G, GroupIndex g, Time now);
  void join(FlowIndex f, GroupIndex g, double left, Time now);
  double leave(FlowIndex f, Time now);
  void touch(Group& G, GroupIndex g);
  // A group's members, a binary heap (sim/kernel/heap.h) by finish, each
  // member's place kept in its heap_pos.
  using MemberHeap = DaryHeap<2>;
  struct FinishesFirst {
    bool operator()(const Member& a, const Member& b) const { return a.finish < b.finish; }
  };
  struct MemberPlaced {
    std::vector<Flow>* flows;
    void operator()(const Member& m, std::size_t i) const {
      (*flows)[m.flow].heap_pos = static_cast<std::uint32_t>(i);
    }
  };
  [[nodiscard]] static FinishesFirst finishes_first() { return {}; }
  [[nodiscard]] MemberPlaced member_placed() { return {&flows_}; }

  BottleneckStructure structure_;
  std::vector<Flow> flows_;
  std::vector<Group> groups_;
  std::vector<GroupIndex> touched_;
  std::size_t solved_ = 0;  // touched_'s first entries, the last solve's
  Stats stats_;
};

}  // namespace meshsim::sim::kernel
