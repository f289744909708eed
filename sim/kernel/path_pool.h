#pragma once
// Flat storage for the paths of flows that come and go: per path entry, a
// link, the flow's weight on it, and the entry's places in two lists that
// hold it (its link's list of flows, and an edge's list of members in
// sim/kernel/bottleneck_structure.h). A path is a block of consecutive entries;
// freed blocks are reused by paths of the same length, so the pool grows
// to the most paths held at once, not the paths ever stored.

#include <cstdint>
#include <vector>

#include "core/error.h"

namespace meshsim::sim::kernel {

struct PathPool {
  /// What a list keeps of each entry: the flow, and the hop of its path.
  struct Entry {
    std::uint32_t flow;
    std::uint32_t hop;
  };
  static constexpr std::uint32_t kNoEdge = UINT32_MAX;

  std::vector<std::uint32_t> link;
  std::vector<double> weight;
  std::vector<std::uint32_t> slot;   // place in the link's list
  std::vector<std::uint32_t> edge;   // the edge it is a member of, or kNoEdge
  std::vector<std::uint32_t> eslot;  // place in that edge's list

  /// The offset of a block of `len` entries (contents unspecified).
  std::uint32_t alloc(std::uint32_t len) {
    if (free_.size() <= len) free_.resize(len + 1);
    if (!free_[len].empty()) {
      const std::uint32_t off = free_[len].back();
      free_[len].pop_back();
      return off;
    }
    MESHSIM_ASSERT(link.size() + len < UINT32_MAX - 1, "flow path pool overflow");
    const auto off = static_cast<std::uint32_t>(link.size());
    const std::size_t n = link.size() + len;
    link.resize(n);
    weight.resize(n);
    slot.resize(n);
    edge.resize(n, kNoEdge);
    eslot.resize(n);
    return off;
  }
  void release(std::uint32_t off, std::uint32_t len) { free_[len].push_back(off); }

  /// Path entry `at` (hop `hop` of `flow`) joins `list`; `slots` (slot or
  /// eslot) records where.
  static void enlist(std::vector<Entry>& list, std::vector<std::uint32_t>& slots, std::uint32_t at,
                     std::uint32_t flow, std::uint32_t hop) {
    slots[at] = static_cast<std::uint32_t>(list.size());
    list.push_back({flow, hop});
  }
  /// Path entry `at` leaves `list`; the entry moved into its place learns
  /// its new position (off_of(flow): where that flow's path starts).
  template <typename OffsetOf>
  static void unlist(std::vector<Entry>& list, std::vector<std::uint32_t>& slots, std::uint32_t at,
                     OffsetOf off_of) {
    const std::uint32_t pos = slots[at];
    list[pos] = list.back();
    slots[off_of(list[pos].flow) + list[pos].hop] = pos;
    list.pop_back();
  }

 private:
  std::vector<std::vector<std::uint32_t>> free_;  // by length: offsets of free blocks
};

}  // namespace meshsim::sim::kernel
