#pragma once
// Lists of values stored flat: list k is a span of one shared array, so a
// table with a list per task costs two allocations, not one per task
// (plans of 100,000+ tasks are scheduled and simulated once per searched
// configuration).

#include <concepts>
#include <cstddef>
#include <span>
#include <vector>

namespace meshsim {

template <typename T>
class FlatLists {
 public:
  [[nodiscard]] std::span<const T> operator[](std::size_t k) const {
    return {items_.data() + start_[k], items_.data() + start_[k + 1]};
  }
  [[nodiscard]] std::size_t size() const { return start_.size() - 1; }
  /// Room for `lists` lists holding `items` values in all (a hint).
  void reserve(std::size_t lists, std::size_t items) {
    start_.reserve(lists + 1);
    items_.reserve(items);
  }
  /// Appends the next list.
  void push_back(std::span<const T> list) {
    for (const T& x : list) items_.push_back(x);  // (lists are short: no call to copy them)
    start_.push_back(items_.size());
  }

  /// The next list, built in place, value by value, with no copy: add()
  /// appends to it, open() is it so far (to reorder or look at), trim()
  /// drops values from its end, and close() ends it (then it is list
  /// size() - 1).
  void add(const T& x) { items_.push_back(x); }
  [[nodiscard]] std::span<T> open() { return {items_.data() + start_.back(), items_.data() + items_.size()}; }
  void trim(std::size_t count) { items_.resize(items_.size() - count); }
  void close() { start_.push_back(items_.size()); }
  bool operator==(const FlatLists&) const = default;

  /// For lists of indices below size(): list v of the result holds every k
  /// whose list holds v, ascending.
  [[nodiscard]] FlatLists reverse() const requires std::integral<T> {
    const std::size_t n = size();
    FlatLists r;
    r.start_.assign(n + 1, 0);
    for (T v : items_) ++r.start_[static_cast<std::size_t>(v) + 1];
    for (std::size_t k = 0; k < n; ++k) r.start_[k + 1] += r.start_[k];
    r.items_.resize(items_.size());
    std::vector<std::size_t> fill(r.start_.begin(), r.start_.end() - 1);
    for (std::size_t k = 0; k < n; ++k)  // k ascending: each reversed list comes out ascending
      for (T v : (*this)[k]) r.items_[fill[static_cast<std::size_t>(v)]++] = static_cast<T>(k);
    return r;
  }

 private:
  std::vector<std::size_t> start_{0};  // list k is items_[start_[k], start_[k + 1])
  std::vector<T> items_;
};

}  // namespace meshsim
