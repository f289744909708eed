#include "core/append_lists.h"

#include <catch2/catch.hpp>

using namespace meshsim;

TEST_CASE("append lists read back each key's values in the order appended", "[append-lists]") {
  // Keys appended to in interleaved order; key 1 stays empty; reading
  // appends to what the output already holds.
  AppendLists l(3);
  l.append(2, 7);
  l.append(0, 4);
  l.append(2, 5);
  l.append(0, 9);
  l.append(2, 1);
  std::vector<std::size_t> out{99};
  l.read(2, out);
  CHECK(out == std::vector<std::size_t>{99, 7, 5, 1});
  out.clear();
  l.read(0, out);
  CHECK(out == std::vector<std::size_t>{4, 9});
  out.clear();
  l.read(1, out);
  CHECK(out.empty());
}
