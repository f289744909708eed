#include "core/flat_lists.h"

#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>

using namespace meshsim;

namespace {

std::vector<std::size_t> list(const FlatLists<std::size_t>& l, std::size_t k) {
  return {l[k].begin(), l[k].end()};
}

}  // namespace

TEST_CASE("flat lists built in place read back as the lists pushed whole", "[flat-lists]") {
  // List 0 pushed whole; list 1 built in place as {5, 3, 5, 1}, sorted and
  // its repeat trimmed to {1, 3, 5}; list 2 closed empty; list 3 pushed
  // whole after them.
  FlatLists<std::size_t> l;
  l.reserve(4, 8);
  const std::vector<std::size_t> first{2, 0};
  l.push_back(first);
  for (std::size_t x : {5U, 3U, 5U, 1U}) l.add(x);
  CHECK(l.open().size() == 4);
  const auto open = l.open();
  std::sort(open.begin(), open.end());
  l.trim(static_cast<std::size_t>(open.end() - std::unique(open.begin(), open.end())));
  l.close();
  l.close();
  const std::vector<std::size_t> last{4};
  l.push_back(last);
  REQUIRE(l.size() == 4);
  CHECK(list(l, 0) == std::vector<std::size_t>{2, 0});
  CHECK(list(l, 1) == std::vector<std::size_t>{1, 3, 5});
  CHECK(list(l, 2).empty());
  CHECK(list(l, 3) == std::vector<std::size_t>{4});
}

TEST_CASE("a flat list table reversed lists, for each value, the lists that hold it", "[flat-lists]") {
  // Lists {1, 2}, {2}, {}: value 0 is in none, 1 in list 0, 2 in lists 0
  // and 1 (ascending).
  FlatLists<std::size_t> l;
  for (std::size_t x : {1U, 2U}) l.add(x);
  l.close();
  l.add(2);
  l.close();
  l.close();
  const FlatLists<std::size_t> r = l.reverse();
  REQUIRE(r.size() == 3);
  CHECK(list(r, 0).empty());
  CHECK(list(r, 1) == std::vector<std::size_t>{0});
  CHECK(list(r, 2) == std::vector<std::size_t>{0, 1});
}
