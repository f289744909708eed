#include "plan/compare.h"

#include <catch2/catch.hpp>

using namespace meshsim;
using namespace meshsim::plan;

TEST_CASE("relative error is (predicted - measured) / measured", "[plan][compare]") {
  CHECK(*relative_error(Time::us(110), Time::us(100)) == Approx(0.10));
  CHECK(*relative_error(Time::us(50), Time::us(100)) == Approx(-0.50));
  CHECK(*relative_error(Time::zero(), Time::zero()) == 0.0);
  CHECK_FALSE(relative_error(Time::us(1), Time::zero()));  // nothing measured: no error to give
}

TEST_CASE("two timelines compare task by task, largest errors first", "[plan][compare]") {
  // Durations predicted / measured: a 10/8 (+25 %), b 5/10 (-50 %), c 3/0
  // (none), d 4/4 (0). Makespans 20 / 16: +25 %. Mean |error| over the four
  // tasks, c counting zero: (0.25 + 0.5 + 0 + 0) / 4 = 0.1875.
  const auto us = [](std::int64_t v) { return Time::us(v); };
  Timeline p{{{us(0), us(10)}, {us(10), us(15)}, {us(0), us(3)}, {us(15), us(19)}}, us(20), {}};
  Timeline m{{{us(0), us(8)}, {us(8), us(18)}, {us(2), us(2)}, {us(12), us(16)}}, us(16), {}};
  const TimelineComparison c = compare_timelines(p, m);
  CHECK(*c.makespan_error == Approx(0.25));
  REQUIRE(c.tasks.size() == 4);
  CHECK(*c.tasks[0].error == Approx(0.25));
  CHECK(*c.tasks[1].error == Approx(-0.5));
  CHECK_FALSE(c.tasks[2].error);
  CHECK(c.tasks[3].predicted == us(4));
  CHECK(c.mean_abs_task_error == Approx(0.1875));
  CHECK(c.largest_errors_first() == std::vector<std::size_t>{2, 1, 0, 3});
}
