// Flows alone on their links (sim/kernel/bottleneck_structure.h, "Flows alone").
#include "core/error.h"
#include "sim/kernel/bottleneck_structure.h"

namespace meshsim::sim::kernel {

// Flow f (its path written, not yet listed) starts alone when it has no
// cap, at most kLook links and none of them carries another flow.
bool BottleneckStructure::start_alone(FlowIndex f) {
  const Flow& fl = flows_[f];
  if (!alone_ok_ || fl.len != fl.links || fl.links > kLook) return false;
  for (std::uint32_t h = 0; h < fl.links; ++h)
    if (occupant_[link_at(f, h)] != kFree) return false;
  for (std::uint32_t h = 0; h < fl.links; ++h) occupant_[link_at(f, h)] = f;
  flows_[f].alone = true;
  ++stats_.alone;
  note_move(f, kNone);
  limit(f, alone_bottleneck(f));
  return true;
}

// first_bottleneck() as it would be once f's links were listed: alone, a
// link is left out exactly when a tighter link of f is crossed at least as
// heavily (first_flow, over at most kLook links), and a link without flows
// has F = W = 0 (drop_edge zeroes F with the last in-edge, unlimit W), so
// its level would be C / w. Hops in order of that level (ties: path
// order), the first kept one limits f.
std::uint32_t BottleneckStructure::alone_bottleneck(FlowIndex f) const {
  const Flow& fl = flows_[f];
  auto level = [&](std::uint32_t h) { return capacity_[link_at(f, h)] / weight_at(f, h); };
  std::uint32_t best = kNone;
  double lowest = kInf;
  for (std::uint32_t h = 0; h < fl.links; ++h) {
    const double lh = level(h);
    if (best != kNone && !(lh < lowest)) continue;  // (only a new lowest needs to be kept)
    bool left_out = false;
    for (std::uint32_t k = 0; k < fl.links && !left_out; ++k)
      left_out = k != h && tighter(link_at(f, k), link_at(f, h)) && weight_at(f, k) >= weight_at(f, h);
    if (left_out) continue;
    best = h;
    lowest = lh;
  }
  MESHSIM_ASSERT(best != kNone, "a flow crosses a kept link");
  return best;
}

// Another flow is joining a link of f, which ran alone: f enters the lists
// and edges as add() would have entered it (it is limited already).
void BottleneckStructure::bring_in(FlowIndex f) {
  flows_[f].alone = false;
  ++stats_.brought;
  enter_links(f);
  MESHSIM_ASSERT(hop_kept(f, flows_[f].bneck), "a flow alone is limited where add() would limit it");
  for (std::uint32_t h = 0; h < flows_[f].len; ++h) {
    if (!hop_kept(f, h)) continue;
    if (h != flows_[f].bneck) join_edge(f, h);
    queue(link_at(f, h));
  }
}

// Flow f, alone on its links, ends: its bottleneck limits no flow again.
void BottleneckStructure::end_alone(FlowIndex f) {
  const LinkIndex b = bottleneck(f);
  unlimit(f);
  queue(b);
  for (std::uint32_t h = 0; h < flows_[f].links; ++h) occupant_[link_at(f, h)] = kFree;
  flows_[f].alone = false;
}

}  // namespace meshsim::sim::kernel
