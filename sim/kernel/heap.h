#pragma once
// The kernel's one heap: a d-ary min-heap kept in a std::vector, for every
// queue of the kernel (the engine's events and timers, the bottleneck
// structure's repairs, each flow group's members).
//
// `before(a, b)`: a leaves the heap before b. `placed(x, i)` is told every
// time element x lands at index i, so that whoever owns the elements can
// keep each one's position and then erase or re-key it in place (an
// indexed heap); plain queues pass nothing. For a fixed sequence of
// operations the order of pops is fixed, ties included: an element moves
// above a parent only when it is strictly before it, and down to the first
// of its smallest children only when that child is strictly before it.
//
// Arity. Four children per node halve a binary heap's depth and share a
// cache line or two: the engine's and the structure's queues, pushed and
// popped millions of times, use four. The flow groups keep two: their
// members tie often (equal flows finish together), and the arity decides
// which of them a group reports first.
//
// Costs: push, erase and update O(log_d n) sifts; top O(1).

#include <algorithm>
#include <cstddef>
#include <vector>

namespace meshsim::sim::kernel {

/// No position to keep: a plain priority queue.
struct NoPlacement {
  template <typename T>
  void operator()(const T& /*x*/, std::size_t /*i*/) const {}
};

template <std::size_t Arity>
struct DaryHeap {
  static_assert(Arity >= 2, "a heap node has at least two children");

  template <typename T, typename Before, typename Placed = NoPlacement>
  static void push(std::vector<T>& v, const T& x, Before before, Placed placed = {}) {
    v.push_back(x);
    sift_up(v, v.size() - 1, x, before, placed);
  }

  /// Removes v[i]: the last element takes its place and moves up or down.
  template <typename T, typename Before, typename Placed = NoPlacement>
  static void erase(std::vector<T>& v, std::size_t i, Before before, Placed placed = {}) {
    const T last = v.back();
    v.pop_back();
    if (i == v.size()) return;
    if (i > 0 && before(last, v[parent(i)]))
      sift_up(v, i, last, before, placed);
    else
      sift_down(v, i, last, before, placed);
  }

  /// Removes v[0] from a heap whose elements never tie (`before` orders
  /// any two of them): the hole at the top descends along the first of
  /// the smallest children to a leaf, each picked without a branch, and
  /// the last element fills it and moves up. The order of pops is that of
  /// erase(v, 0) (the elements are distinct); the arrangement differs.
  template <typename T, typename Before>
  static void pop_distinct(std::vector<T>& v, Before before) {
    const T last = v.back();
    v.pop_back();
    const std::size_t n = v.size();
    if (n == 0) return;
    std::size_t i = 0;
    for (std::size_t first = 1; first < n; first = Arity * i + 1) {
      const std::size_t best = smallest_child(v, first, n, before);
      v[i] = v[best];
      i = best;
    }
    NoPlacement placed;
    sift_up(v, i, last, before, placed);
  }

  /// Puts x in v[i]'s place (x's key may be before or after the old one).
  template <typename T, typename Before, typename Placed = NoPlacement>
  static void update(std::vector<T>& v, std::size_t i, const T& x, Before before, Placed placed = {}) {
    if (before(x, v[i]))
      sift_up(v, i, x, before, placed);
    else
      sift_down(v, i, x, before, placed);
  }

 private:
  static std::size_t parent(std::size_t i) { return (i - 1) / Arity; }

  // The first of the smallest children first, first + 1, ... (below n),
  // each comparison without a branch. Four children are compared as a
  // tournament, two pairs and then their winners (ties to the left):
  // two comparisons deep where a scan is three, each waiting on the last.
  template <typename T, typename Before>
  static std::size_t smallest_child(const std::vector<T>& v, std::size_t first, std::size_t n,
                                    Before& before) {
    if constexpr (Arity == 4) {
      if (first + 4 <= n) {
        const std::size_t a = first + static_cast<std::size_t>(before(v[first + 1], v[first]));
        const std::size_t b = first + 2 + static_cast<std::size_t>(before(v[first + 3], v[first + 2]));
        return before(v[b], v[a]) ? b : a;
      }
    }
    std::size_t best = first;
    const std::size_t end = std::min(first + Arity, n);
    for (std::size_t c = first + 1; c < end; ++c)
      best += static_cast<std::size_t>(before(v[c], v[best])) * (c - best);
    return best;
  }

  template <typename T, typename Placed>
  static void place(std::vector<T>& v, std::size_t i, const T& x, Placed& placed) {
    v[i] = x;
    placed(x, i);
  }

  // x goes to slot i or above: parents after it move down.
  template <typename T, typename Before, typename Placed>
  static void sift_up(std::vector<T>& v, std::size_t i, T x, Before& before, Placed& placed) {
    while (i > 0) {
      const std::size_t p = parent(i);
      if (!before(x, v[p])) break;
      place(v, i, v[p], placed);
      i = p;
    }
    place(v, i, x, placed);
  }

  // x goes to slot i or below: the first smallest child before it moves up.
  template <typename T, typename Before, typename Placed>
  static void sift_down(std::vector<T>& v, std::size_t i, T x, Before& before, Placed& placed) {
    const std::size_t n = v.size();
    while (true) {
      const std::size_t first = Arity * i + 1;
      if (first >= n) break;
      const std::size_t best = smallest_child(v, first, n, before);
      if (!before(v[best], x)) break;
      place(v, i, v[best], placed);
      i = best;
    }
    place(v, i, x, placed);
  }
};

/// A plain queue on DaryHeap: push, and pop the element before all others.
template <typename T, typename Before, std::size_t Arity = 4>
class Heap {
 public:
  [[nodiscard]] bool empty() const { return v_.empty(); }
  [[nodiscard]] std::size_t size() const { return v_.size(); }
  [[nodiscard]] const T& top() const { return v_.front(); }
  /// The entries in heap order (not sorted).
  [[nodiscard]] const std::vector<T>& items() const { return v_; }
  void clear() { v_.clear(); }
  void push(const T& x) { DaryHeap<Arity>::push(v_, x, before_); }
  T pop() {
    const T top = v_.front();
    DaryHeap<Arity>::erase(v_, 0, before_);
    return top;
  }
  /// pop() for a queue whose elements never tie (DaryHeap::pop_distinct).
  T pop_distinct() {
    const T top = v_.front();
    DaryHeap<Arity>::pop_distinct(v_, before_);
    return top;
  }

 private:
  std::vector<T> v_;
  [[no_unique_address]] Before before_{};
};

}  // namespace meshsim::sim::kernel
