#pragma once
// A monotone priority queue (radix heap) for non-negative double keys.
//
// Valid when every pushed key is >= the last popped key, as in progressive
// filling, where fair-share levels only grow. The bit pattern of a
// non-negative IEEE double orders like the double, so keys are bucketed by
// the highest bit in which they differ from the last popped key: push is
// O(1), pop is amortised O(64) cheap moves instead of O(log n) branchy
// comparisons. Among equal keys, pops follow a fixed order for a fixed
// sequence of operations, so runs stay deterministic.

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.h"

namespace meshsim::sim {

template <typename Value>
class RadixHeap {
 public:
  void push(double key, Value v) {
    const std::uint64_t k = bits(key);
    MESHSIM_ASSERT(k >= last_, "radix heap keys must not go below the last popped key");
    buckets_[bucket(k)].push_back({k, v});
    ++size_;
  }

  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::size_t size() const { return size_; }

  /// Removes and returns a smallest (key, value).
  std::pair<double, Value> pop() {
    settle();
    const Item it = buckets_[0].back();
    buckets_[0].pop_back();
    --size_;
    return {key_of(it.key), it.value};
  }

  void clear() {
    for (auto& b : buckets_) b.clear();
    size_ = 0;
    last_ = 0;
  }

 private:
  // Brings the smallest keys into bucket 0.
  void settle() {
    MESHSIM_ASSERT(size_ > 0, "pop from an empty radix heap");
    if (!buckets_[0].empty()) return;
    std::size_t i = 1;
    while (buckets_[i].empty()) ++i;
    // The new minimum is the smallest key of bucket i; every other item
    // of the bucket now differs from it in a lower bit.
    std::uint64_t m = buckets_[i][0].key;
    for (const auto& it : buckets_[i]) m = it.key < m ? it.key : m;
    last_ = m;
    for (const auto& it : buckets_[i]) buckets_[bucket(it.key)].push_back(it);
    buckets_[i].clear();
  }

  struct Item {
    std::uint64_t key;
    Value value;
  };
  static std::uint64_t bits(double d) {
    MESHSIM_ASSERT(d >= 0.0, "radix heap keys are non-negative");
    std::uint64_t u = 0;
    std::memcpy(&u, &d, sizeof u);
    return u;
  }
  static double key_of(std::uint64_t u) {
    double d = 0;
    std::memcpy(&d, &u, sizeof d);
    return d;
  }
  [[nodiscard]] std::size_t bucket(std::uint64_t k) const {
    return k == last_ ? 0 : 64 - static_cast<std::size_t>(std::countl_zero(k ^ last_));
  }

  std::array<std::vector<Item>, 65> buckets_;
  std::uint64_t last_ = 0;
  std::size_t size_ = 0;
};

}  // namespace meshsim::sim
