#include "core/hash.h"

#include <array>
#include <set>

#include <catch2/catch.hpp>

using namespace meshsim;

TEST_CASE("fnv1a is the published 64-bit FNV-1a", "[hash]") {
  // The FNV reference values: the offset basis for "", and "a".
  CHECK(fnv1a("") == 0xcbf29ce484222325ULL);
  CHECK(fnv1a("a") == 0xaf63dc4c8601ec8cULL);
}

TEST_CASE("hash_words tells apart keys that differ in order, length or one word", "[hash]") {
  // Cache keys are (op, size, choices, group): a group in another order,
  // one member more or one bit changed is another key.
  const std::array<std::int64_t, 3> abc{1, 2, 3};
  const std::array<std::int64_t, 3> cba{3, 2, 1};
  const std::array<std::int64_t, 4> abc0{1, 2, 3, 0};
  const std::array<std::int64_t, 3> abd{1, 2, 4};
  const std::set<std::uint64_t> seen{hash_words(abc), hash_words(cba), hash_words(abc0), hash_words(abd),
                                     hash_words(std::span<const std::int64_t>{})};
  CHECK(seen.size() == 5);
  CHECK(hash_words(abc) == hash_words(std::array<std::int64_t, 3>{1, 2, 3}));  // a pure function
}
