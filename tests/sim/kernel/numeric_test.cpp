#include "sim/kernel/numeric.h"

#include <cmath>

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

TEST_CASE("durations round up exactly, whatever their size", "[numeric]") {
  // 7.9e6 s is 7.9e18 ps, far above 2^53 where every double is a whole
  // number: it stays as it is, as 5 s does below. 2^40 ps plus a quarter
  // (exact in a double) goes up by three quarters.
  CHECK(duration_up(7.9e6) == Time::s(7'900'000));
  const double p40 = 1099511627776.0;  // 2^40
  CHECK(duration_up((p40 + 0.25) / 1e12).count_ps() == 1099511627777);
  CHECK(duration_up(5.0) == Time::s(5));
  // Just below a whole picosecond: up to it.
  CHECK(duration_up(std::nextafter(3e-12, 0.0)) == Time::ps(3));
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
