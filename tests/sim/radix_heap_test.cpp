#include "sim/radix_heap.h"

#include <algorithm>
#include <random>

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::sim;

TEST_CASE("radix heap pops in key order while keys only grow", "[radix-heap]") {
  // 10,000 random keys, then interleaved pushes at or above the last popped
  // key: the pops come out sorted, as a sorted copy says.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1e12);
  RadixHeap<int> h;
  std::vector<double> pushed;
  for (int i = 0; i < 10'000; ++i) {
    pushed.push_back(u(rng));
    h.push(pushed.back(), i);
  }
  std::vector<double> popped;
  while (!h.empty()) {
    popped.push_back(h.pop().first);
    if (popped.size() % 3 == 0 && popped.size() < 20'000) {
      pushed.push_back(popped.back() * (1.0 + u(rng) / 1e12));  // >= the last pop
      h.push(pushed.back(), 0);
    }
  }
  std::sort(pushed.begin(), pushed.end());
  CHECK(popped == pushed);
}

TEST_CASE("radix heap handles zero and equal keys, and rejects keys below the last pop", "[radix-heap]") {
  RadixHeap<int> h;
  h.push(0.0, 1);
  h.push(2.5, 2);
  h.push(2.5, 3);
  CHECK(h.pop().first == 0.0);
  CHECK(h.pop().first == 2.5);
  CHECK(h.size() == 1);
  CHECK_THROWS_AS(h.push(1.0, 4), InternalError);
  CHECK(h.pop().first == 2.5);
  CHECK(h.empty());
}
