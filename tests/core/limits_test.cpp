// Checked arithmetic, the memory limit, and errors carried out of threads.

#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>

#include "core/checked.h"
#include "core/error.h"
#include "core/memory_limit.h"
#include "core/thread_group.h"
#include "core/units.h"

using namespace meshsim;

TEST_CASE("checked_mul and checked_add report int64 overflow", "[limits]") {
  CHECK(checked_mul(INT64_C(1) << 31, INT64_C(1) << 31) == (INT64_C(1) << 62));
  CHECK_FALSE(checked_mul(INT64_C(1) << 32, INT64_C(1) << 31).has_value());  // 2^63
  CHECK(checked_mul(-(INT64_C(1) << 31), INT64_C(1) << 32) == std::numeric_limits<std::int64_t>::min());
  CHECK(checked_add(std::numeric_limits<std::int64_t>::max() - 1, 1) ==
        std::numeric_limits<std::int64_t>::max());
  CHECK_FALSE(checked_add(std::numeric_limits<std::int64_t>::max(), 1).has_value());
}

TEST_CASE("checked_bytes truncates sizes in range and refuses the rest", "[limits]") {
  CHECK(checked_bytes(5.9, "x").count() == 5);
  CHECK(checked_bytes(0, "x").count() == 0);
  // 2^62 is exact in a double; 2^63 is the first value past the range.
  CHECK(checked_bytes(std::ldexp(1.0, 62), "x").count() == INT64_C(1) << 62);
  CHECK_THROWS_AS(checked_bytes(std::ldexp(1.0, 63), "x"), UsageError);
  CHECK_THROWS_AS(checked_bytes(-1, "x"), UsageError);
  CHECK_THROWS_WITH(checked_bytes(std::nan(""), "a layer's traffic"),
                    Catch::Contains("a layer's traffic come to nan bytes"));
}

TEST_CASE("A limit of the user's own lowers the memory limit, and require_memory names it", "[limits]") {
  set_memory_limit(INT64_C(1) << 30);
  const MemoryLimit m = memory_limit();
  CHECK(m.bytes == INT64_C(1) << 30);  // every machine that runs the tests has more than 1 GiB free
  CHECK(m.source == "--max-memory");
  CHECK_NOTHROW(require_memory(1e9, "a small job", "ask for less"));  // 1e9 < 2^30 = 1.074e9
  CHECK_THROWS_WITH(
      require_memory(2e9, "a big job", "ask for less"),
      "a big job would need about 1.863 GiB of memory, more than the 1 GiB this process may use "
      "(--max-memory); ask for less");
  CHECK_THROWS_AS(require_memory(std::nan(""), "a job", "ask for less"), UsageError);
  set_memory_limit(0);
  CHECK(memory_limit().source != "--max-memory");
}

TEST_CASE("ThreadGroup carries the first exception of a worker to join()", "[limits]") {
  std::atomic<int> ran{0};
  ThreadGroup group("test threads");
  group.start([&] { ++ran; }, 3);
  group.start([&] { throw std::length_error("worker failed"); }, 3);
  group.start([&] { ++ran; }, 3);
  CHECK_THROWS_WITH(group.join(), "worker failed");
  CHECK(ran == 2);              // the others ran to the end and were joined
  CHECK_NOTHROW(group.join());  // the error is reported once
}
