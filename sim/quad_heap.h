#pragma once
// A 4-ary min-heap: half the depth of a binary heap, and the four children
// of a node share a cache line or two, which suits queues that are pushed
// and popped millions of times (the engine's events, the bottleneck
// structure's repairs). `Before(a, b)`: a leaves the heap before b. For a
// fixed sequence of operations the order of pops is fixed, ties included.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace meshsim::sim {

template <typename T, typename Before>
class QuadHeap {
 public:
  [[nodiscard]] bool empty() const { return v_.empty(); }
  [[nodiscard]] std::size_t size() const { return v_.size(); }
  [[nodiscard]] const T& top() const { return v_.front(); }
  void clear() { v_.clear(); }

  void push(const T& x) {
    std::size_t i = v_.size();
    v_.push_back(x);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (!before_(x, v_[parent])) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = x;
  }

  T pop() {
    const T top = v_.front();
    const T last = v_.back();
    v_.pop_back();
    const std::size_t n = v_.size();
    if (n == 0) return top;
    std::size_t i = 0;
    while (true) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = std::min(first + 4, n);
      for (std::size_t c = first + 1; c < end; ++c)
        if (before_(v_[c], v_[best])) best = c;
      if (!before_(v_[best], last)) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = last;
    return top;
  }

 private:
  std::vector<T> v_;
  [[no_unique_address]] Before before_{};
};

}  // namespace meshsim::sim
