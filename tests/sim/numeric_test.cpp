#include "sim/numeric.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "tests/sim/flow_ends.h"
#include "topology/topology.h"

using namespace meshsim;
using namespace meshsim::sim;

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

TEST_CASE("a flow whose rate changes often is late by at most its chain of roundings", "[numeric]") {
  // One link of 3 B/s. Flow a (10 B) starts at 0. One-byte flows start at
  // 0 and then 1/3 s after each previous one ends. Shared, both run at
  // 1.5 B/s (a one-byte flow takes 2/3 s, a moves 1 B); in each 1/3 s gap a
  // runs alone at 3 B/s (1 B). So a moves 2 B per second and ends at
  // exactly 5 s, after 10 rate changes. Every duration rounds up by under
  // 1 ps and the one-byte flows form a chain of 20 rounded steps before a
  // ends: a ends no earlier than 5 s less a picosecond and at most 20 ps
  // after it.
  topology::Topology t;
  t.add_host(topology::Host{"h0", ""});
  const auto x = t.add_node(topology::Node{"h0/gpu0", topology::NodeKind::gpu, 0, "H100"});
  const auto y = t.add_node(topology::Node{"h0/gpu1", topology::NodeKind::gpu, 0, "H100"});
  t.add_link(topology::Link{topology::LinkKind::nvlink, x, y, Bandwidth::bytes_per_second(3), 1, Time::zero(),
                            1.0, 0, 0});
  Engine e;
  FlowNetwork net(e, t);
  const std::vector<topology::DirLinkId> path{topology::Topology::directed(0, false)};
  FlowEnds ends;
  net.start(path, Time::zero(), Bytes(10), ends(0));
  std::uint64_t next = 1;
  ends.then = [&](std::uint64_t, Time) {
    if (!ends.done(0))
      e.schedule(e.after(duration_up(1.0 / 3)),
                 [&] { net.start(path, Time::zero(), Bytes(1), ends(next++)); });
  };
  net.start(path, Time::zero(), Bytes(1), ends(next++));
  e.run();
  const Time end = ends.at.at(0);
  INFO("a ends at " << end.count_ps() << " ps");
  CHECK(end >= Time::s(5) - Time::ps(1));
  CHECK(end <= Time::s(5) + Time::ps(20));
}
