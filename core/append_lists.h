#pragma once
// Lists of indices, one per key, appended to in any order of keys and read
// in the order appended: three flat arrays instead of a vector per key
// (a pipeline plan has one list per pass of every microbatch).

#include <cstddef>
#include <vector>

namespace meshsim {

class AppendLists {
 public:
  explicit AppendLists(std::size_t keys) : head_(keys, kEnd), tail_(keys, kEnd) {}
  void append(std::size_t key, std::size_t value) {
    const std::size_t n = nodes_.size();
    nodes_.push_back({value, kEnd});
    (tail_[key] == kEnd ? head_[key] : nodes_[tail_[key]].next) = n;
    tail_[key] = n;
  }
  /// Appends list `key` to `out`.
  void read(std::size_t key, std::vector<std::size_t>& out) const {
    for (std::size_t n = head_[key]; n != kEnd; n = nodes_[n].next) out.push_back(nodes_[n].value);
  }

 private:
  static constexpr std::size_t kEnd = static_cast<std::size_t>(-1);
  struct Node {
    std::size_t value;
    std::size_t next;
  };
  std::vector<std::size_t> head_;
  std::vector<std::size_t> tail_;
  std::vector<Node> nodes_;
};

}  // namespace meshsim
