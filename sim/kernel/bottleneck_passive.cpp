// Links that limit no flow: passive, kept within capacity by allowances
// instead of by every level change (sim/kernel/bottleneck_structure.h).
#include <algorithm>

#include "sim/kernel/bottleneck_structure.h"
#include "sim/kernel/numeric.h"

namespace meshsim::sim::kernel {

// Edge e moves to its tail's passive list (`base`: the tail's level that
// its head counts) or to its list of edges to links that limit flows.
void BottleneckStructure::move_out(EdgeIndex e, bool passive, double base) {
  Edge& E = edges_[e];
  if (E.passive == passive) {  // (with every link kept, a link that starts limiting flows)
    if (passive) {
      passive_of(e).base = base;
      lists_[E.tail].bounds[E.out_slot] = base + lists_[E.head].allow;
    }
    return;
  }
  Lists& T = lists_[E.tail];
  const OutEdge o = unlist_out(T, E.passive, E.out_slot);
  enlist_out(e, passive, o, base);
}

// Link l starts limiting flows: its F becomes exact (its in-edges' tails
// at their levels now) and its in-edges move where level changes reach.
void BottleneckStructure::activate(LinkIndex l) {
  tighten(l);
  double fixed = 0;
  double max_in = 0;
  for (const auto [e, tail, a] : lists_[l].in) {
    const double level = links_[tail].level;
    fixed += a * level;
    max_in = std::max(max_in, level);
    move_out(e, false, 0.0);
  }
  Link& L = links_[l];
  L.fixed = fixed;
  L.max_in = max_in;
  L.stale = false;
  lists_[l].allow = kInf;
}

// Link l limits no flow any more: its in-edges become passive, counted at
// their tails' levels now. With every link kept, none is passive: level
// changes still reach l, so that its load stays exact.
void BottleneckStructure::deactivate(LinkIndex l) {
  if (!keep_all_)
    for (const auto [e, tail, a] : lists_[l].in) move_out(e, true, links_[tail].level);
  if (sync(l)) queue(l);
}

// Passive link l counts its in-edges at their tails' levels now and
// shares the capacity left among them: each tail may rise by `allow`
// before l must look again, and its alarm says when. True when l is over
// capacity: it must take flows in (repair).
bool BottleneckStructure::sync(LinkIndex l) {
  double weight = count(l);
  Link& L = links_[l];
  L.stale = false;
  // Over capacity by the bounds: first count the flows at their own rates.
  if (L.fixed > L.capacity * (1 + kSaturated) && tighten(l)) weight = count(l);
  const double fixed = L.fixed;
  const bool over = fixed > L.capacity * (1 + kSaturated);
  Lists& LL = lists_[l];
  if (over) {
    LL.allow = 0;  // (a link over capacity promises nothing, to tails or joins)
    LL.reserve = 0;
  } else {
    // Half of the capacity left is shared among the tails, half kept for
    // joins and for tails that rise past their share.
    const double spare = std::max(0.0, L.capacity - fixed);
    LL.allow = weight > 0 ? kShared * spare / weight : kInf;
    LL.reserve = weight > 0 ? (1 - kShared) * spare : L.capacity - fixed;
  }
  for (const InEdge& in : LL.in) {
    if (!over) {
      Link& T = links_[in.tail];
      T.alarm = std::min(T.alarm, T.level + LL.allow);
    }
    if (const Edge& E = edges_[in.edge]; E.passive)
      lists_[E.tail].bounds[E.out_slot] = passive_of(in.edge).base + LL.allow;
  }
  return over;
}

// Passive link l's F counted afresh, each in-edge at its tail's level now
// (its new base); returns Σ A.
double BottleneckStructure::count(LinkIndex l) {
  double fixed = 0;
  double weight = 0;
  double max_in = 0;
  for (const auto [e, tail, a] : lists_[l].in) {
    const double level = links_[tail].level;
    if (edges_[e].passive) passive_of(e).base = level;
    fixed += a * level;
    weight += a;
    max_in = std::max(max_in, level);
  }
  links_[l].fixed = fixed;
  links_[l].max_in = max_in;
  return weight;
}

// Link l rose past its alarm: each passive link it may now overload
// counts its edge from l at l's level now, paying the rise from its
// reserve, or (the reserve short) counts every in-edge afresh; the alarm
// becomes exact.
void BottleneckStructure::trip(LinkIndex l) {
  ++stats_.trips;
  const double level = links_[l].level;
  double alarm = kInf;
  std::vector<PassiveEdge>& passive = lists_[l].passive;
  std::vector<double>& bounds = lists_[l].bounds;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (level > bounds[i]) {
      const LinkIndex h = passive[i].head;
      const double rise = passive[i].weight * (level - passive[i].base);
      if (rise <= lists_[h].reserve) {
        lists_[h].reserve -= rise;
        links_[h].fixed += rise;
        links_[h].max_in = std::max(links_[h].max_in, level);
        passive[i].base = level;
        bounds[i] = level + lists_[h].allow;
        alarm = std::min(alarm, bounds[i]);
        continue;
      }
      // A sync that tightens moves edges, l's among them: look again.
      const std::uint64_t rehomed = stats_.rehomed;
      if (sync(h)) queue(h);
      if (stats_.rehomed != rehomed) {
        i = static_cast<std::size_t>(-1);
        alarm = kInf;
        continue;
      }
    }
    alarm = std::min(alarm, bounds[i]);
  }
  links_[l].alarm = alarm;
}

}  // namespace meshsim::sim::kernel
