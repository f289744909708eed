#pragma once
// A hash index from 64-bit keys to 32-bit values, for lookups on hot
// paths: open addressing with linear probing in one flat array (a power of
// two, at most half full), deletion by backward shift (no tombstones), so
// a lookup touches one or two cache lines. Key UINT64_MAX is reserved.

#include <cstdint>
#include <vector>

#include "core/error.h"

namespace meshsim::sim::kernel {

class FlatIndex {
 public:
  static constexpr std::uint32_t kAbsent = UINT32_MAX;

  /// The value stored for `key`, or kAbsent.
  [[nodiscard]] std::uint32_t find(std::uint64_t key) const {
    if (slots_.empty()) return kAbsent;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == kEmpty) return kAbsent;
    }
  }

  /// Stores `value` for `key`, which must not be present.
  void insert(std::uint64_t key, std::uint32_t value) {
    MESHSIM_ASSERT(key != kEmpty, "flat index key UINT64_MAX is reserved");
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = home(key);
    while (slots_[i].key != kEmpty) {
      MESHSIM_ASSERT(slots_[i].key != key, "flat index key inserted twice");
      i = (i + 1) & mask_;
    }
    slots_[i] = {key, value};
    ++size_;
  }

  /// Removes `key`, which must be present.
  void erase(std::uint64_t key) {
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      MESHSIM_ASSERT(slots_[i].key != kEmpty, "flat index key erased but absent");
      i = (i + 1) & mask_;
    }
    // Backward shift: pull later entries of the probe run into the hole
    // when their home does not lie (cyclically) between the hole and them.
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i].key = kEmpty;
    --size_;
  }

  [[nodiscard]] std::size_t size() const { return size_; }

  void clear() {
    for (Slot& s : slots_) s.key = kEmpty;
    size_ = 0;
  }

 private:
  static constexpr std::uint64_t kEmpty = UINT64_MAX;
  struct Slot {
    std::uint64_t key = kEmpty;
    std::uint32_t value = 0;
  };

  [[nodiscard]] std::size_t home(std::uint64_t key) const {
    // Fibonacci hashing: the top bits of key × 2^64/φ.
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_) & mask_;
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const std::size_t n = old.empty() ? 64 : 2 * old.size();
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    shift_ = 64;
    for (std::size_t k = n; k > 1; k >>= 1) --shift_;
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != kEmpty) insert(s.key, s.value);
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace meshsim::sim::kernel
