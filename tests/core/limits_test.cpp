// Checked arithmetic, the memory limit and budget, and errors carried out of threads.

#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "core/checked.h"
#include "core/error.h"
#include "core/memory_budget.h"
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

TEST_CASE("A MemoryBudget lets a share grow while the shares fit, and holds nothing past its capacity",
          "[limits]") {
  MemoryBudget budget(10);
  MemoryBudget::Share a(budget);
  MemoryBudget::Share b(budget);
  int dropped = 0;
  auto drop = [&] { ++dropped; };
  a.hold(6, drop);
  b.hold(3, drop);  // 6 + 3 <= 10: grows in place
  b.hold(2, drop);  // already holds 3 and nobody waits: keeps its storage and its share
  CHECK(a.bytes() == 6);
  CHECK(b.bytes() == 3);
  CHECK(budget.held() == 9);
  b.hold(4, drop);  // 6 + 4 <= 10
  CHECK(budget.held() == 10);
  b.hold(11, drop);  // past the capacity: the job's own check refuses it, nothing is held for it
  CHECK(b.bytes() == 4);
  CHECK(dropped == 0);
  {
    MemoryBudget::Share c(budget);
    CHECK(c.bytes() == 0);
  }
  CHECK(budget.held() == 10);
}

TEST_CASE("A MemoryBudget share that does not fit waits, holding nothing, until another gives way",
          "[limits]") {
  MemoryBudget budget(10);
  MemoryBudget::Share a(budget);
  int a_dropped = 0;
  a.hold(6, [&] { ++a_dropped; });
  std::atomic<int> b_dropped{0};
  std::atomic<std::int64_t> b_holds{0};
  std::thread waiter([&] {  // Catch2's checks are for the main thread: b reports through atomics
    MemoryBudget::Share b(budget);
    b.hold(3, [&] { ++b_dropped; });  // 9 <= 10: in place, nothing dropped
    b.hold(5, [&] { ++b_dropped; });  // 6 + 5 > 10: drops its storage, gives its 3 back, waits
    b_holds = b.bytes();
  });
  while (budget.waiting() == 0) std::this_thread::yield();
  CHECK(budget.held() == 6);  // b gave its 3 back while it waits
  CHECK(b_dropped == 1);
  CHECK(b_holds == 0);
  // a's next job needs only 2: someone waits, so a frees its storage and asks for 2 anew.
  a.hold(2, [&] { ++a_dropped; });
  waiter.join();
  CHECK(a_dropped == 1);
  CHECK(a.bytes() == 2);
  CHECK(b_holds == 5);        // 2 + 5 <= 10
  CHECK(budget.held() == 2);  // b's share went back when it ended
}
