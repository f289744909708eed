#include "sim/kernel/numeric.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::sim::kernel;

TEST_CASE("durations round up to the next picosecond, never down", "[numeric]") {
  // 1/3 s is 333,333,333,333.3 ps: 333,333,333,334. A whole number of
  // picoseconds stays as it is; any positive work takes at least 1 ps.
  CHECK(duration_up(1.0 / 3) == Time::ps(333'333'333'334));
  CHECK(duration_up(2e-6) == Time::us(2));
  CHECK(duration_up(1e-20) == Time::ps(1));
  CHECK(duration_up(0) == Time::zero());
  CHECK(duration_up(-1) == Time::zero());
  CHECK_THROWS_AS(duration_up(1e7), UsageError);  // past the clock's 8e6 s
}

TEST_CASE("rates within the tolerance are one rate", "[numeric]") {
  CHECK(same_rate(1e9, 1e9));
  CHECK(same_rate(1e9 * (1 + 0.5e-12), 1e9));
  CHECK_FALSE(same_rate(1e9 * (1 + 1e-9), 1e9));
  // rate_above is the strict side of the same tolerance.
  CHECK(rate_above(1e9 * (1 + 1e-9), 1e9));
  CHECK_FALSE(rate_above(1e9 * (1 + 0.5e-12), 1e9));
  CHECK_FALSE(rate_above(1e9, 1e9 * (1 + 1e-9)));
}
