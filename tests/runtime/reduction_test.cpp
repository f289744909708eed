#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/values.h"
#include "runtime/work.h"
#include "tests/gpu/gpu_test_util.h"

using namespace meshsim;
using namespace meshsim::runtime;

namespace {

using Box = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::vector<std::byte> bytes_of(plan::DType d, double v) {
  std::vector<std::byte> b(static_cast<std::size_t>(plan::dtype_size(d)));
  encode_value(d, v, b);
  return b;
}

std::uint16_t u16(const std::vector<std::byte>& b) {
  return static_cast<std::uint16_t>(static_cast<unsigned>(b[0]) | (static_cast<unsigned>(b[1]) << 8U));
}

using gputest::sum_plan;

Verification run_on_host(const plan::Plan& p) {
  auto backend = make_host_backend({.threads = 2, .compute_time = {}});
  return run_plan(p, *backend, {.warmup = 1, .iterations = 2, .verify = true}).check;
}

}  // namespace

TEST_CASE("numbers encode in every dtype, rounding to nearest even", "[runtime][values]") {
  // IEEE binary16: 1 = 0x3c00, -2 = 0xc000, 65504 = 0x7bff (the largest),
  // 2^-24 = 0x0001 (the smallest subnormal). 1 + 2^-11 lies halfway between
  // 1 and 1 + 2^-10: even rounds down to 0x3c00; 1 + 3 * 2^-11 rounds up to 0x3c02.
  CHECK(u16(bytes_of(plan::DType::f16, 1.0)) == 0x3C00);
  CHECK(u16(bytes_of(plan::DType::f16, -2.0)) == 0xC000);
  CHECK(u16(bytes_of(plan::DType::f16, 65504.0)) == 0x7BFF);
  CHECK(u16(bytes_of(plan::DType::f16, 0x1p-24)) == 0x0001);
  CHECK(u16(bytes_of(plan::DType::f16, 1.0 + 0x1p-11)) == 0x3C00);
  CHECK(u16(bytes_of(plan::DType::f16, 1.0 + 3 * 0x1p-11)) == 0x3C02);
  // bfloat16 is the top half of an f32: 1 = 0x3f80, 0.5 = 0x3f00; 1 + 2^-8 is
  // halfway to 1 + 2^-7 and rounds to even, 1.
  CHECK(u16(bytes_of(plan::DType::bf16, 1.0)) == 0x3F80);
  CHECK(u16(bytes_of(plan::DType::bf16, 0.5)) == 0x3F00);
  CHECK(u16(bytes_of(plan::DType::bf16, 1.0 + 0x1p-8)) == 0x3F80);
  CHECK(static_cast<int>(bytes_of(plan::DType::i8, 300.0)[0]) == 127);  // saturates
  for (plan::DType d : {plan::DType::f32, plan::DType::f16, plan::DType::bf16, plan::DType::f64,
                        plan::DType::i32, plan::DType::i8})
    for (double v : {-126.0, -3.0, 0.0, 7.0, 126.0}) CHECK(decode_value(d, bytes_of(d, v)) == v);
  CHECK(decode_value(plan::DType::u8, bytes_of(plan::DType::u8, 252.0)) == 252.0);
}

TEST_CASE("test values of a tensor of parts add up to its whole", "[runtime][values]") {
  const plan::Tensor g{"G", {100}, plan::DType::bf16, 7};
  for (std::int64_t e = 0; e < 100; ++e) {
    int sum = 0;
    for (int k = 0; k < 7; ++k) {
      const int c = test_value(g, 0, k, e);
      CHECK((c >= -2 && c <= 2));
      sum += c;
    }
    CHECK(test_value(g, 0, -1, e) == sum);
  }
}

TEST_CASE("all-reduce and reduce-scatter sums are verified in every dtype", "[runtime][reduce]") {
  for (plan::DType d : {plan::DType::f32, plan::DType::f16, plan::DType::bf16, plan::DType::f64,
                        plan::DType::i32, plan::DType::i8, plan::DType::u8})
    for (plan::CollectiveOp op : {plan::CollectiveOp::all_reduce, plan::CollectiveOp::reduce_scatter}) {
      INFO(plan::to_string(d) << " " << plan::to_string(op));
      const plan::Plan p = sum_plan(d, 4, op);
      const Verification v = run_on_host(p);
      CHECK(v.ok);
      // all_reduce: 4 buffers of 8 x 10; reduce_scatter: 4 shards of 2 x 10.
      CHECK(v.elements_checked == (op == plan::CollectiveOp::all_reduce ? 320 : 80));
    }
}

TEST_CASE("a missing, doubled or misplaced contribution fails the check", "[runtime][reduce]") {
  const plan::Plan good = sum_plan(plan::DType::bf16, 4, plan::CollectiveOp::all_reduce);
  REQUIRE(run_on_host(good).ok);
  plan::Plan missing = good;
  missing.tasks[0].payload.erase(missing.tasks[0].payload.begin() + 5);  // s1 loses p1
  plan::Plan doubled = good;
  doubled.tasks[0].payload[5].src_buffer = 0;  // s1 gets p0 twice
  for (const plan::Plan* p : {&missing, &doubled}) {
    const Verification v = run_on_host(*p);
    CHECK_FALSE(v.ok);
    REQUIRE(v.mismatches.size() == 1);
    CHECK(v.mismatches[0].buffer == "s1");
    CHECK(v.mismatches[0].task == "reduce");
  }
  // Every element of the other ranks is still right.
  CHECK(run_on_host(missing).bad_elements < 80);
}
