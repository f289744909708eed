#include "runtime/layout.h"

#include <cstring>

#include <catch2/catch.hpp>

using namespace meshsim;
using namespace meshsim::runtime;

namespace {

plan::Buffer boxed(const std::string& name, const plan::Tensor& t,
                   std::vector<std::pair<std::int64_t, std::int64_t>> box) {
  std::int64_t n = plan::dtype_size(t.dtype);
  for (const auto& [lo, hi] : box) n *= hi - lo;
  (void)t;
  return plan::Buffer{name, 0, Bytes(n), 0, std::move(box)};
}

plan::Buffer flat(const std::string& name, Bytes size) {
  return plan::Buffer{name, 1, size, std::nullopt, {}};
}

plan::Region region(const plan::Tensor& t, std::vector<std::pair<std::int64_t, std::int64_t>> box,
                    Bytes dst_offset = Bytes(0)) {
  (void)t;
  return plan::Region{0, std::move(box), 0, Bytes(0), 1, dst_offset};
}

}  // namespace

TEST_CASE("a column block of a row-major tile is one strided copy", "[runtime][layout]") {
  // T is 8x6 f32. The source holds rows 0-3 (all 6 columns: rows are 24 B
  // apart); the destination holds columns 3-5 of every row (rows 12 B apart).
  // Region rows 0-3, columns 3-5: 4 runs of 12 B, source stride 24, dest
  // stride 12, starting at source byte 3*4 = 12 and destination byte 0.
  const plan::Tensor t{"T", {8, 6}, plan::DType::f32};
  const auto c = copy_of(t, region(t, {{0, 4}, {3, 6}}), boxed("src", t, {{0, 4}, {0, 6}}),
                         boxed("dst", t, {{0, 8}, {3, 6}}));
  CHECK(c.row_bytes == 12);
  REQUIRE(c.outer.size() == 1);
  CHECK(c.outer[0].count == 4);
  CHECK(c.outer[0].src_stride == 24);
  CHECK(c.outer[0].dst_stride == 12);
  CHECK(c.src_offset == 12);
  CHECK(c.dst_offset == 0);
  CHECK(c.bytes() == 48);
}

TEST_CASE("whole rows are a single run", "[runtime][layout]") {
  // Rows 2-3 of a 4x6 f32 tile are 48 contiguous bytes at 2*24 = 48, written
  // contiguously at the destination's offset 100.
  const plan::Tensor t{"T", {8, 6}, plan::DType::f32};
  const auto c = copy_of(t, region(t, {{2, 4}, {0, 6}}, Bytes(100)), boxed("src", t, {{0, 4}, {0, 6}}),
                         flat("dst", Bytes(200)));
  CHECK(c.outer.empty());
  CHECK(c.row_bytes == 48);
  CHECK(c.src_offset == 48);
  CHECK(c.dst_offset == 100);
}

TEST_CASE("3-D boxes merge what is contiguous and keep what is not", "[runtime][layout]") {
  // T is 4x4x4 f32, the source holds all of it (strides 64, 16, 4 B).
  const plan::Tensor t{"T", {4, 4, 4}, plan::DType::f32};
  const auto src = boxed("src", t, {{0, 4}, {0, 4}, {0, 4}});
  SECTION("full inner rows: the middle dimension joins the run") {
    // [1,3) x [1,3) x [0,4): rows of 4 elements at source stride 16 = the
    // run, so the run is 2 rows = 32 B; then 2 runs 64 B apart in the
    // source and 32 B apart in the (contiguous) destination.
    const auto c = copy_of(t, region(t, {{1, 3}, {1, 3}, {0, 4}}), src, flat("dst", Bytes(64)));
    CHECK(c.row_bytes == 32);
    REQUIRE(c.outer.size() == 1);
    CHECK(c.outer[0].count == 2);
    CHECK(c.outer[0].src_stride == 64);
    CHECK(c.outer[0].dst_stride == 32);
    CHECK(c.src_offset == (16 + 4) * 4);
  }
  SECTION("a 2x2x2 sub-cube: two outer dimensions, visited row-major") {
    // Runs of 2 elements (8 B); source offset of (1,1,1) = (16+4+1)*4 = 84;
    // rows at source 84, 100, 148, 164 and destination 0, 8, 16, 24.
    const auto c = copy_of(t, region(t, {{1, 3}, {1, 3}, {1, 3}}), src, flat("dst", Bytes(32)));
    CHECK(c.row_bytes == 8);
    REQUIRE(c.outer.size() == 2);
    std::vector<std::pair<std::int64_t, std::int64_t>> rows;
    c.for_each_row([&](std::int64_t s, std::int64_t d) { rows.emplace_back(s, d); });
    CHECK(rows ==
          std::vector<std::pair<std::int64_t, std::int64_t>>{{84, 0}, {100, 8}, {148, 16}, {164, 24}});
  }
  SECTION("extent-1 dimensions disappear") {
    // [2,3) x [0,4) x [0,4): one plane, 64 contiguous bytes at 128.
    const auto c = copy_of(t, region(t, {{2, 3}, {0, 4}, {0, 4}}), src, flat("dst", Bytes(64)));
    CHECK(c.outer.empty());
    CHECK(c.row_bytes == 64);
    CHECK(c.src_offset == 128);
  }
}

TEST_CASE("the fill pattern tells elements, tensors and neighbours apart", "[runtime][layout]") {
  // 4-byte patterns of 100,000 consecutive elements of one tensor have no
  // two equal neighbours, and tensor 0 and tensor 1 differ at every index.
  std::array<std::byte, 4> a{}, b{}, prev{};
  int equal_neighbours = 0;
  int equal_across = 0;
  for (std::int64_t g = 0; g < 100000; ++g) {
    pattern(0, g, a);
    pattern(1, g, b);
    if (g > 0 && a == prev) ++equal_neighbours;
    if (a == b) ++equal_across;
    prev = a;
  }
  CHECK(equal_neighbours == 0);
  CHECK(equal_across == 0);
  // offset_in_box: element (2,4) of the 8x6 tensor inside box rows 1-3,
  // columns 3-5 is at position (1,1) of a 3x3 box = 4 elements = 16 bytes.
  const plan::Tensor t{"T", {8, 6}, plan::DType::f32};
  CHECK(offset_in_box(t, {{1, 4}, {3, 6}}, 2 * 6 + 4) == 16);
}

TEST_CASE("a strided copy through a packed staging area moves what the copy moves", "[runtime][layout]") {
  // Rows 1-3, columns 3-5 of T, from a tile whose rows are 24 B apart to
  // one whose rows are 12 B apart: 3 runs of 12 B. Packing the destination
  // side writes the runs back to back from 0 (36 B); unpacking reads them
  // from there. The two in turn put the same bytes where the direct copy does.
  const plan::Tensor t{"T", {8, 6}, plan::DType::f32};
  const auto src = boxed("src", t, {{0, 4}, {0, 6}});
  const auto dst = boxed("dst", t, {{0, 8}, {3, 6}});
  const StridedCopy c = copy_of(t, region(t, {{1, 4}, {3, 6}}), src, dst);
  std::vector<std::byte> from(96), direct(96, std::byte{0}), staged(96, std::byte{0}), stage(36);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<std::byte>(i);
  const auto apply = [](const StridedCopy& k, const std::vector<std::byte>& a, std::vector<std::byte>& b) {
    k.for_each_row([&](std::int64_t s, std::int64_t d) {
      std::memcpy(b.data() + d, a.data() + s, static_cast<std::size_t>(k.row_bytes));
    });
  };
  apply(c, from, direct);
  const StridedCopy in = with_packed_destination(c);
  const StridedCopy out = with_packed_source(c);
  CHECK(in.dst_offset == 0);
  CHECK(out.src_offset == 0);
  CHECK(in.bytes() == 36);
  apply(in, from, stage);
  apply(out, stage, staged);
  CHECK(staged == direct);
  // Packed means contiguous: the staging area holds rows 1-3, columns 3-5 of T in order.
  CHECK(stage[0] == from[static_cast<std::size_t>(c.src_offset)]);
}
