#pragma once
// Max-min fair rates kept up to date as flows come and go, by repairing
// the bottleneck structure only where a change reaches it.
//
// The rates are those of sim/kernel/maxmin.h. In the max-min fair allocation each
// flow f has a bottleneck b(f): a saturated link on which no flow is
// faster (or its own cap, modelled below as a link of its own). The flows
// limited by one link share one rate, the link's level λ_b, and a flow's
// rate is the lowest level on its path. For a link l (capacity C_l, a
// flow's weight on it w_fl) write
//   W_l = Σ_{f ∋ l, b(f) = l} w_fl                 the flows limited here,
//   F_l = Σ_{f ∋ l, b(f) ≠ l} w_fl · λ_{b(f)}      what the others use of l.
// Rates λ_{b(f)} are max-min fair exactly when, on every link l,
//   (1) W_l > 0:  l is full,                  λ_l = (C_l − F_l) / W_l;
//   (2) W_l = 0:  l is within capacity,       F_l ≤ C_l (and λ_l = +∞);
//   (3) no flow on l is faster than its level: λ_{b(f)} ≤ λ_l for f ∋ l.
// (1)-(3) give each flow a saturated link on which it is fastest: the
// bottleneck condition of sim/kernel/maxmin.h.
//
// Edges. The flows limited at b that cross another link l form the edge
// (l, b), of weight A_lb = Σ w_fl; then F_l = Σ_b A_lb · λ_b over l's
// in-edges. By (3) an edge climbs from a lower level to a higher one, so
// a change at a link can move only the levels above it that its out-edges
// reach: on a 1,024-GPU fabric with 10,000 flows, a start or an end moves
// about 50 of 600 levels over about 150 edges. Repairing along the edges
// costs that, where re-filling a connected component (as a selective
// update does) costs every flow of it: in a shared fabric, all of them.
//
// Repair. A batch of additions and removals breaks (1)-(3) only at links
// whose W, F or in-edge levels it changes; those are queued, lowest level
// first (the order in which edges climb; links whose level moves no
// other, having no out-edges to links that limit flows, after all the
// others), and each is repaired in turn:
//   - If an in-edge (l, b) breaks (3) (λ_b above the level l would have),
//     or l is over capacity with W_l = 0, l takes in its fastest in-edges
//     (water-filling: in decreasing λ_b while λ_b is above the level they
//     raise l to), and their flows move to their lowest link.
//   - l's level becomes (C_l − F_l) / W_l (+∞ when W_l = 0); a change Δ
//     moves F_k by A_kl · Δ at the head k of each out-edge, queuing k.
// A flow that moves re-weighs the edges of its links and queues them. A
// new flow starts limited at the link of its path with the lowest level
// it would give, (C − F) / (W + w). When the queue is empty (1)-(3) hold
// on every link the batch touched, and elsewhere nothing they depend on
// changed: the rates are the max-min fair rates. The repair is a
// label-correcting iteration: a link may be repaired more than once, but
// low levels settle first (in any other order, three to four times as
// many repairs). Should a batch run past kMaxRepairs repairs per link it
// queued, or add more flows than are active, the structure is built
// afresh from a progressive filling (max_min_solve) instead.
//
// Passive links. A kept link that limits no flow (W_l = 0) only has to
// stay within capacity, and most out-edges lead to such links (three in
// four on the 1,024-GPU fabric). They are not told of level changes.
// Instead a passive link l counts each in-edge e = (l, b) at a base
// level β_e (its F_l = Σ A_e β_e) and shares half the capacity left
// among them (kShared): each tail may rise by δ_l = (C_l − F_l) / (2 Σ
// A_e) above its base, which keeps l within capacity; the other half is
// the link's reserve, C_l − F_l − δ_l Σ A_e. A tail keeps an alarm, the
// lowest β_e + δ_head over its passive out-edges. When its level rises
// past it, each such link pays the rise, A_e (λ − β_e), from its reserve
// and counts e at the new base; only when the reserve falls short is the
// link counted afresh (sync). A flow leaving a passive link frees w (β_e +
// δ_l) of what it had promised; one joining takes that from the reserve,
// and only when the reserve would go negative is the link counted
// afresh. (Sharing all of it would leave the reserve empty after each
// sync, so that every trip counted its link afresh: on the one-GPU-per-
// host tree, 0.77 M syncs over 39 M in-edges, against 0.16 M over 7.7 M
// with half kept, for a fifth more trips.)
//
// Bounds. A passive link needs only an upper bound on its flows' rates,
// and by (3) the level of any kept link of f's path that limits flows is
// one. So f's edge at a passive link starts at the hop of f nearest to
// it that is kept and limits flows, not at f's bottleneck, and stays
// there when f's bottleneck moves: a move re-weighs only the edges at
// links that limit flows. (On a one-GPU-per-host tree, the host links of
// each of 1.9 million moves would otherwise leave their edges and join
// new ones, most of them one flow each, and a fifth of the joins would
// count the link afresh.) F_l then counts bounds: a link over capacity by
// them first moves its in-edges' members to the edges from their own
// bottlenecks (tightens) and counts again, and takes flows in only if it
// is over still. A link that starts limiting flows tightens, so that its
// F is exact; one that stops moves the members of its passive out-edges
// to their next bound.
//
// Caps. A flow's cap is a link of its own, of capacity cap and weight 1:
// the flow is limited there exactly when it runs at its cap.
//
// Links left out. A link l whose every flow crosses another link m at
// least as heavily (w_fm ≥ w_fl), with C_m ≤ C_l (ties to the lower
// index, so the relation has no cycles), carries no more than m and can
// never be over capacity while m is not; it is left out of the structure
// (no edges, no level). Each link keeps up to kCandidates such m, taken
// from the first flow that crosses it and thinned as flows join; a link
// whose candidates run out joins the structure with its flows (and stays
// until it is empty again). The three links of a GPU's PCIe–NIC chain,
// which carry the same flows at the same capacity, are one link to the
// structure. keep_all_links() turns this off, and passive links with it
// (every level change reaches every link it crosses), so that load() is
// exact on every link (for link timelines).
//
// Flows alone. A flow without a cap whose links carry no other flow (and
// at most kLook of them) does not enter the lists and edges: it is limited
// where a flow added by the rules above would be (the lowest level among
// the links that would be kept) and touches nothing else, and each of its
// links remembers it as its only flow. The first other flow to cross one
// of those links brings it in (its lists and edges, exactly as an add
// would have made them) before joining itself; a flow that ends alone
// leaves as it came. Most flows of a pipeline plan (a tensor-parallel
// all-reduce inside a host, a stage transfer between hosts) run alone.
// keep_all_links() turns this off.
//
// Numerics (sim/kernel/numeric.h). A level within kRateTolerance of the value
// (1) gives is kept, so no change is pushed; F_l is a running sum, summed
// afresh from the in-edges every kRefresh repairs of l (and at every sync
// of a passive link); a link is over capacity when F_l > C_l (1 +
// kSaturated).
//
// Flow ids are recycled: an id is free again once its flow is removed.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/kernel/flat_index.h"
#include "sim/kernel/heap.h"
#include "sim/kernel/maxmin.h"
#include "sim/kernel/path_pool.h"

namespace meshsim::sim::kernel {

class BottleneckStructure {
 public:
  using FlowIndex = std::uint32_t;
  /// Links [0, link_count()) are the network's; a capped flow's cap is a
  /// link above them.
  using LinkIndex = std::uint32_t;
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr int kCandidates = 6;
  static constexpr std::uint32_t kRefresh = 256;
  static constexpr std::uint64_t kMaxRepairs = 64;
  /// A link looks this far down its first flow's links, tightest first,
  /// for candidates to be left out behind (a bound for the lockstep flows
  /// of long rings); a flow alone has at most this many links.
  static constexpr std::uint32_t kLook = 64;
  /// The part of a passive link's spare capacity that a sync shares among
  /// its in-edges' tails; the rest is its reserve (see "Passive links").
  static constexpr double kShared = 0.5;

  /// Links with these capacities (bytes per second, each > 0).
  explicit BottleneckStructure(const std::vector<double>& capacity);

  /// Keeps every link in the structure, so that load() is exact on all
  /// of them. Call before the first add().
  void keep_all_links();
  /// Every flow enters the lists and edges, alone or not (for tests that
  /// compare). Call before the first add().
  void no_flows_alone();

  /// Adds a flow over `links` (distinct), weighted by `weights` (empty:
  /// all 1), capped at `cap` (0: none).
  FlowIndex add(std::span<const LinkIndex> links, std::span<const double> weights, double cap);
  /// Removes a flow; its id may be handed out again by add().
  void remove(FlowIndex f);
  /// Repairs the structure after the additions and removals since the
  /// last solve().
  void solve();

  [[nodiscard]] double rate(FlowIndex f) const { return links_[bottleneck(f)].level; }
  /// The link that limits flow f (its cap's link when it runs at its cap).
  [[nodiscard]] LinkIndex bottleneck(FlowIndex f) const {
    return paths_.link[flows_[f].off + flows_[f].bneck];
  }
  [[nodiscard]] double level(LinkIndex l) const { return links_[l].level; }

  /// What the last solve() changed: levels (with the level before it) and
  /// bottlenecks (with the one before; kNone for the flows it added).
  struct LevelChange {
    LinkIndex link;
    double before;
  };
  struct Move {
    FlowIndex flow;
    LinkIndex before;
  };
  [[nodiscard]] const std::vector<LevelChange>& level_changes() const { return level_changes_; }
  [[nodiscard]] const std::vector<Move>& moves() const { return moves_; }
  /// The network links whose load the last solve() may have changed.
  [[nodiscard]] const std::vector<LinkIndex>& touched_links() const { return touched_links_; }

  [[nodiscard]] std::size_t link_count() const { return network_links_; }
  /// Links the cap links may use: link_count() plus those of capped flows.
  [[nodiscard]] std::size_t link_slots() const { return links_.size(); }
  [[nodiscard]] double capacity(LinkIndex l) const { return links_[l].capacity; }
  /// Whether link l is in the structure (not left out, see above).
  [[nodiscard]] bool kept(LinkIndex l) const { return !links_[l].left_out; }
  /// Σ weight × rate of the flows on link l, exact for kept links.
  [[nodiscard]] double load(LinkIndex l) const;
  [[nodiscard]] std::size_t active() const { return active_; }

  /// The active flows as a MaxMinProblem over the network links (caps as
  /// caps), with their ids and rates in the same order.
  struct Snapshot {
    MaxMinProblem problem;
    std::vector<FlowIndex> flows;
    std::vector<double> rates;
  };
  [[nodiscard]] Snapshot snapshot() const;
  /// The first of (1)-(3) that a kept link breaks (relative `tolerance`),
  /// or nothing: a check of the structure's own invariants.
  [[nodiscard]] std::optional<std::string> check(double tolerance = 1e-9) const;

  struct Stats {
    std::uint64_t solves = 0;
    std::uint64_t repairs = 0;   // links repaired
    std::uint64_t pushes = 0;    // out-edges a level change moved
    std::uint64_t moves = 0;     // flows that changed bottleneck
    std::uint64_t takes = 0;     // in-edges taken in by water-filling
    std::uint64_t joins = 0;     // links that joined the structure
    std::uint64_t trips = 0;     // alarms: a level rose past what its passive out-edges allow
    std::uint64_t rehomed = 0;   // passive edges' members moved to their bottleneck's edge
    std::uint64_t rebuilds = 0;  // batches solved afresh
    std::uint64_t level_changes = 0;
    std::uint64_t alone = 0;    // flows that started alone on their links
    std::uint64_t brought = 0;  // of those, brought in by a flow that joined them
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  using EdgeIndex = std::uint32_t;

  // What (1)-(3) read of a link, kept compact: pushes and repairs touch
  // little else, and one cache line holds it.
  struct alignas(64) Link {
    double capacity = 0;
    double level = kInf;
    double wsum = 0;            // W
    double fixed = 0;           // F (passive: Σ A · base over its in-edges)
    double max_in = 0;          // ≥ the level of every in-edge's tail
    double alarm = kInf;        // ≤ base + allowance of every passive out-edge
    std::uint32_t noted = 0;    // == stamp(): in noted_levels_
    std::uint32_t waited = 0;   // == stamp(): counted in batch_waiting_
    std::uint32_t limited = 0;  // flows limited here
    bool left_out = false;      // carries no more than another link
    bool queued = false;
    bool stale = false;  // passive, with in-edges not yet counted in allow
    bool leaf = true;    // no out-edges to links that limit flows
  };
  static_assert(sizeof(Link) == 64, "a link's record is one cache line");
  // An out-edge as its tail keeps it: the head and the edge's weight A
  // (16 bytes: a level change streams through them).
  struct OutEdge {
    LinkIndex head;
    EdgeIndex edge;
    double weight;
  };
  // An out-edge to a passive head also keeps the tail's level that the
  // head's F counts (its base). The level that uses up its share, base +
  // the head's allowance (its bound), is kept apart, in the tail's array
  // of bounds beside its passive list: a trip scans the bounds for those
  // its level passed, without a visit to each head, and reads a quarter
  // of the lines it would if each bound sat in its edge (set where
  // either changes: a new edge, a sync of the head, a rise paid).
  struct PassiveEdge : OutEdge {
    double base;
  };
  // An in-edge as its head keeps it: the edge, its tail and a copy of its
  // weight (what a scan of the in-edges reads, kept beside the index:
  // through the edge, the weight is three dependent loads away). weigh()
  // changes both copies alike.
  struct InEdge {
    EdgeIndex edge;
    LinkIndex tail;
    double weight;
  };
  // The rest of a link: its edges, its flows, its candidates to be left
  // out behind, and bookkeeping. The out-edges come first, so that one
  // cache line holds all a repair reads here, and a passive link's
  // allowance and reserve, which a join, a leave and a trip read together.
  struct alignas(64) Lists {
    std::vector<OutEdge> out;  // edges (l, this) to links that limit flows
    std::uint32_t repairs = 0;
    std::uint32_t ncand = 0;
    std::uint64_t touched = 0;
    double allow = kInf;                 // passive: how far each in-edge's tail may rise above its base
    double reserve = 0;                  // passive: C − F − allow · Σ A, what joins may still take
    std::vector<PassiveEdge> passive;    // edges (l, this) to links that limit none
    std::vector<double> bounds;          // passive[i]'s base + its head's allowance
    std::vector<InEdge> in;              // edges (this, b)
    std::vector<PathPool::Entry> flows;  // every flow crossing it
    std::array<LinkIndex, kCandidates> cand{};
  };
  struct Edge {
    LinkIndex head = 0;  // l: the link its flows cross
    LinkIndex tail = 0;  // b: where they are limited
    std::uint32_t in_slot = 0;
    std::uint32_t out_slot = 0;
    bool passive = false;  // in the tail's passive list
    std::vector<PathPool::Entry> members;
  };
  struct Flow {
    std::uint32_t off = 0;  // into paths_: its links, then its cap's
    std::uint32_t len = 0;
    std::uint32_t links = 0;  // network links (the cap's comes after)
    std::uint32_t bneck = 0;  // hop of its bottleneck
    std::uint64_t noted = 0;  // == batch_: in noted_moves_ at move_slot
    std::uint32_t move_slot = 0;
    bool active = false;
    bool alone = false;  // outside the lists and edges (see "Flows alone")
  };

  // bottleneck_structure.cpp: flows in and out, bookkeeping.
  LinkIndex new_cap_link(double cap);
  void open_batch();
  [[nodiscard]] std::uint32_t first_bottleneck(FlowIndex f) const;
  void limit(FlowIndex f, std::uint32_t hop);
  void unlimit(FlowIndex f);
  // (Inline: every level change calls both.)
  void note_level(LinkIndex l) {
    if (links_[l].noted == stamp()) return;
    links_[l].noted = stamp();
    noted_levels_.push_back({l, links_[l].level});
  }
  void note_move(FlowIndex f, LinkIndex before);
  // (Only link timelines read the touched links: with keep_all_links().)
  void touch(LinkIndex l) {
    if (keep_all_) touch_kept(l);
  }
  void touch_kept(LinkIndex l);
  void close_batch();
  [[nodiscard]] LinkIndex link_at(FlowIndex f, std::uint32_t hop) const {
    return paths_.link[flows_[f].off + hop];
  }
  [[nodiscard]] double weight_at(FlowIndex f, std::uint32_t hop) const {
    return paths_.weight[flows_[f].off + hop];
  }
  [[nodiscard]] bool hop_kept(FlowIndex f, std::uint32_t hop) const { return kept(link_at(f, hop)); }

  // bottleneck_edges.cpp: edges and the repair.
  [[nodiscard]] OutEdge& out_of(EdgeIndex e) {
    const Edge& E = edges_[e];
    if (E.passive) return lists_[E.tail].passive[E.out_slot];
    return lists_[E.tail].out[E.out_slot];
  }
  [[nodiscard]] const OutEdge& out_of(EdgeIndex e) const {
    const Edge& E = edges_[e];
    if (E.passive) return lists_[E.tail].passive[E.out_slot];
    return lists_[E.tail].out[E.out_slot];
  }
  [[nodiscard]] PassiveEdge& passive_of(EdgeIndex e) {
    return lists_[edges_[e].tail].passive[edges_[e].out_slot];
  }
  template <typename List>
  OutEdge unlist(List& list, std::uint32_t slot);
  OutEdge unlist_out(Lists& tail, bool passive, std::uint32_t slot);
  void enlist_out(EdgeIndex e, bool passive, const OutEdge& o, double base);
  OutEdge& add_member(FlowIndex f, std::uint32_t hop, EdgeIndex e);
  OutEdge& remove_member(FlowIndex f, std::uint32_t hop);
  OutEdge& weigh(EdgeIndex e, double w);
  void join_edge(FlowIndex f, std::uint32_t hop);
  [[nodiscard]] LinkIndex tail_for(FlowIndex f, std::uint32_t hop) const;
  void rehome(FlowIndex f, std::uint32_t hop, LinkIndex tail);
  bool tighten(LinkIndex l);
  void release(LinkIndex l);
  void leave_edge(FlowIndex f, std::uint32_t hop, double rate);
  EdgeIndex edge(LinkIndex head, LinkIndex tail);
  void drop_edge(EdgeIndex e);
  void queue(LinkIndex l);
  bool drain();
  static constexpr std::size_t kOutPerLine = 64 / sizeof(OutEdge);
  void prefetch_out(LinkIndex l) const;
  void repair(LinkIndex l);
  double take_in(LinkIndex l, double level);
  void set_level(LinkIndex l, double level);
  void move(FlowIndex f, std::uint32_t to);
  [[nodiscard]] std::uint32_t lowest_hop(FlowIndex f) const;
  void refresh(LinkIndex l);

  // bottleneck_passive.cpp: links that limit no flow.
  void activate(LinkIndex l);
  void deactivate(LinkIndex l);
  bool sync(LinkIndex l);
  double count(LinkIndex l);
  void trip(LinkIndex l);
  void move_out(EdgeIndex e, bool passive, double base);

  // bottleneck_alone.cpp: flows alone on their links.
  bool start_alone(FlowIndex f);
  [[nodiscard]] std::uint32_t alone_bottleneck(FlowIndex f) const;
  void bring_in(FlowIndex f);
  void end_alone(FlowIndex f);

  // bottleneck_links.cpp: links left out, and building afresh.
  void enter_links(FlowIndex f);
  void leave_links(FlowIndex f);
  // Network link a has less capacity than b, or as much and a lower
  // index: the order in which links may be left out behind others (it has
  // no cycles).
  [[nodiscard]] bool tighter(LinkIndex a, LinkIndex b) const {
    return capacity_[a] != capacity_[b] ? capacity_[a] < capacity_[b] : a < b;
  }
  void first_flow(LinkIndex l, FlowIndex f, std::uint32_t hop);
  void thin(LinkIndex l, FlowIndex f, std::uint32_t hop);
  void keep(LinkIndex l, FlowIndex f);
  void rebuild();
  [[nodiscard]] std::optional<std::string> check_edge(FlowIndex f, std::uint32_t hop, double tol) const;

  std::size_t network_links_ = 0;
  bool keep_all_ = false;
  bool alone_ok_ = true;
  // Per network link: kFree (no flow), kListed (flows in its list) or the
  // one flow alone on it.
  static constexpr std::uint32_t kFree = UINT32_MAX;
  static constexpr std::uint32_t kListed = UINT32_MAX - 1;
  std::vector<std::uint32_t> occupant_;
  std::vector<double> capacity_;  // per network link, dense (tighter() and flows alone read it)
  std::vector<Link> links_;
  std::vector<Lists> lists_;
  std::vector<LinkIndex> free_cap_links_;
  std::vector<Flow> flows_;
  std::vector<FlowIndex> free_flows_;
  PathPool paths_;
  std::vector<Edge> edges_;
  std::vector<EdgeIndex> free_edges_;
  FlatIndex edge_at_;  // (tail << 32 | head) → edge
  std::size_t active_ = 0;
  std::size_t added_ = 0;  // flows added in this batch

  // Links waiting for repair, lowest level first (ties: lower index),
  // each as one 64-bit integer that orders the same way, so that the
  // queue's sifts compare without branches: the top half of the level's
  // bits made monotone (a non-negative level's sign bit set, a negative
  // level's bits all flipped, −0 taken as +0) above the index. The top
  // half keeps 20 bits of the mantissa: levels closer than about 1e-6
  // wait in index order, which the repair allows (any order settles; the
  // level order only saves repairs) at half the width of the full key. A
  // link waits at most once, so no two tie.
  using Waiting = std::uint64_t;
  [[nodiscard]] static Waiting waiting(double key, LinkIndex l) {
    const auto bits = std::bit_cast<std::uint64_t>(key == 0 ? 0.0 : key);
    const std::uint64_t order = (bits >> 63) != 0 ? ~bits : bits | (std::uint64_t{1} << 63);
    return ((order >> 32) << 32) | l;
  }
  Heap<Waiting, std::less<>> heap_;
  std::vector<LinkIndex> leaves_;  // waiting links with no out-edges to links that limit flows
  std::vector<LinkIndex> draining_;
  std::uint64_t batch_ = 1;
  // The batch as the links' stamps keep it (never 0: see open_batch).
  [[nodiscard]] std::uint32_t stamp() const { return static_cast<std::uint32_t>(batch_); }
  bool batch_open_ = false;
  std::uint64_t batch_repairs_ = 0;
  std::uint64_t batch_waiting_ = 0;        // links queued in this batch
  std::vector<LevelChange> noted_levels_;  // this batch's, then filtered into level_changes_
  std::vector<Move> noted_moves_;
  std::vector<LinkIndex> noted_links_;
  std::vector<LevelChange> level_changes_;
  std::vector<Move> moves_;
  std::vector<LinkIndex> touched_links_;
  // Scratch.
  std::vector<EdgeIndex> taken_;
  struct Faster {
    double level;  // the tail's
    EdgeIndex edge;
    double weight;
  };
  std::vector<Faster> faster_;
  std::vector<FlowIndex> movers_;
  std::vector<PathPool::Entry> rehomed_;
  std::vector<std::uint64_t> mark_;  // per link: == mark_stamp_ when on the flow being joined
  std::vector<double> mark_weight_;
  std::vector<LinkIndex> tightest_;  // the links of the flow being joined, tightest first
  std::uint64_t mark_stamp_ = 0;
  Stats stats_;
};

}  // namespace meshsim::sim::kernel
