#include "sim/kernel/heap.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

using namespace meshsim::sim::kernel;

namespace {

// (key, id): ties on key are the interesting case.
using Item = std::pair<int, int>;
struct KeyFirst {
  bool operator()(const Item& a, const Item& b) const { return a.first < b.first; }
};

// Keeps each id's position, as an indexed heap's owner does.
struct Positions {
  std::vector<std::size_t>* at;
  void operator()(const Item& x, std::size_t i) const { (*at)[static_cast<std::size_t>(x.second)] = i; }
};

template <std::size_t Arity>
void check_positions(const std::vector<Item>& v, const std::vector<std::size_t>& at) {
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(at[static_cast<std::size_t>(v[i].second)] == i);
  for (std::size_t i = 1; i < v.size(); ++i) CHECK_FALSE(KeyFirst{}(v[i], v[(i - 1) / Arity]));
}

template <std::size_t Arity>
void random_operations(unsigned seed) {
  // 2,000 random pushes, erases at random positions and re-keys, with keys
  // in 0..49 (many ties): after each, every position is what `placed` said
  // and no child is before its parent; then the pops come out in key order.
  std::mt19937 rng(seed);
  std::vector<Item> heap;
  std::vector<std::size_t> at(2000, SIZE_MAX);
  const Positions placed{&at};
  int next_id = 0;
  for (int step = 0; step < 2000; ++step) {
    const int what = static_cast<int>(rng() % 4);
    if (what <= 1 || heap.empty()) {
      DaryHeap<Arity>::push(heap, Item{static_cast<int>(rng() % 50), next_id++}, KeyFirst{}, placed);
    } else if (what == 2) {
      const std::size_t i = rng() % heap.size();
      at[static_cast<std::size_t>(heap[i].second)] = SIZE_MAX;
      DaryHeap<Arity>::erase(heap, i, KeyFirst{}, placed);
    } else {
      const std::size_t i = rng() % heap.size();
      DaryHeap<Arity>::update(heap, i, Item{static_cast<int>(rng() % 50), heap[i].second}, KeyFirst{},
                              placed);
    }
    check_positions<Arity>(heap, at);
  }
  int last = -1;
  while (!heap.empty()) {
    CHECK(heap.front().first >= last);
    last = heap.front().first;
    DaryHeap<Arity>::erase(heap, 0, KeyFirst{}, placed);
  }
}

}  // namespace

TEST_CASE("the heap keeps its order and its positions under any operations, at any arity", "[heap]") {
  random_operations<2>(1);
  random_operations<4>(2);
  random_operations<3>(3);
}

TEST_CASE("a plain heap pops in order, ties in a fixed order", "[heap]") {
  // Keys 5 3 5 1 3 pushed in that order: pops come by key; the order among
  // equal keys is fixed by the sequence of operations, so two heaps fed the
  // same sequence pop the same ids.
  Heap<Item, KeyFirst> a;
  Heap<Item, KeyFirst> b;
  const std::vector<Item> in{{5, 0}, {3, 1}, {5, 2}, {1, 3}, {3, 4}};
  for (const Item& x : in) {
    a.push(x);
    b.push(x);
  }
  std::vector<int> keys;
  while (!a.empty()) {
    const Item x = a.pop();
    CHECK(x == b.pop());
    keys.push_back(x.first);
  }
  CHECK(keys == std::vector<int>{1, 3, 3, 5, 5});
  CHECK(b.empty());
}

TEST_CASE("a sift moves past an equal key neither up nor down", "[heap]") {
  // Binary heap [1a, 2b, 2c]: pushing 2d stays below 2b (not strictly
  // before it). Popping 1a moves the last element, 2d, to the top, and no
  // child is strictly before it: 2d stays there.
  std::vector<Item> v;
  for (const Item& x : {Item{1, 0}, Item{2, 1}, Item{2, 2}, Item{2, 3}}) DaryHeap<2>::push(v, x, KeyFirst{});
  CHECK(v == std::vector<Item>{{1, 0}, {2, 1}, {2, 2}, {2, 3}});
  DaryHeap<2>::erase(v, 0, KeyFirst{});
  CHECK(v == std::vector<Item>{{2, 3}, {2, 1}, {2, 2}});
}

TEST_CASE("a queue of distinct elements pops the same sequence with pop_distinct as with pop", "[heap]") {
  // Distinct (key, id) pairs ordered by key then id, pushed and popped in
  // random interleavings: pop_distinct takes the hole down to a leaf and
  // then sifts the last element up, so its arrangement differs from pop's,
  // but with no ties each pop must return the same element, the least.
  struct KeyThenId {
    bool operator()(const Item& a, const Item& b) const { return a < b; }
  };
  std::mt19937 rng(7);
  Heap<Item, KeyThenId> plain;
  Heap<Item, KeyThenId> distinct;
  int next_id = 0;
  for (int step = 0; step < 5000; ++step) {
    if (plain.empty() || rng() % 3 != 0) {
      const Item x{static_cast<int>(rng() % 40), next_id++};
      plain.push(x);
      distinct.push(x);
      continue;
    }
    const Item least = *std::min_element(plain.items().begin(), plain.items().end());
    CHECK(plain.pop() == least);
    CHECK(distinct.pop_distinct() == least);
  }
  while (!plain.empty()) CHECK(plain.pop() == distinct.pop_distinct());
  CHECK(distinct.empty());
}
