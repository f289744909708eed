#pragma once
// Ids that index a vector and are handed out again once freed: take_slot
// reuses a freed index when there is one, else appends a default item, so
// the vector grows to the most items held at once, not the items ever
// made.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"

namespace meshsim::sim::kernel {

/// A free index of `items`: the last one `free` holds, or a new item at
/// the end (InternalError `too_many` once `items` holds `limit`).
template <typename T>
std::uint32_t take_slot(std::vector<T>& items, std::vector<std::uint32_t>& free, std::size_t limit,
                        const char* too_many) {
  if (!free.empty()) {
    const std::uint32_t i = free.back();
    free.pop_back();
    return i;
  }
  MESHSIM_ASSERT(items.size() < limit, too_many);
  items.emplace_back();
  return static_cast<std::uint32_t>(items.size() - 1);
}

}  // namespace meshsim::sim::kernel
