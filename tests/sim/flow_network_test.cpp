#include "sim/flow_network.h"

#include <cmath>
#include <functional>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "sim/kernel/numeric.h"
#include "tests/sim/flow_ends.h"
#include "topology/topology.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::topology;

namespace {

// A chain of `rates.size()` network links n0 - n1 - ... with the given
// per-direction capacities (GB/s, efficiency 1) and zero latency.
Topology chain(std::initializer_list<std::int64_t> rates_GBps) {
  Topology t;
  t.add_host(Host{"h", ""});
  std::vector<NodeId> n;
  for (std::size_t i = 0; i <= rates_GBps.size(); ++i)
    n.push_back(t.add_node(Node{fmt::format("n{}", i), NodeKind::nic, 0, {}}));
  std::size_t i = 0;
  for (std::int64_t r : rates_GBps) {
    t.add_link(Link{LinkKind::network, n[i], n[i + 1], Bandwidth::GBps(r), 1, Time::zero(), 1.0, 0, 0});
    ++i;
  }
  return t;
}

DirLinkId fwd(LinkId l) {
  return Topology::directed(l, false);
}

// Completion times are rounded up to the picosecond from a double: allow a
// few picoseconds either way.
void check_time(Time got, double expected_seconds) {
  const double expected_ps = expected_seconds * 1e12;
  INFO("got " << got.count_ps() << " ps, expected " << expected_ps << " ps");
  CHECK(std::fabs(static_cast<double>(got.count_ps()) - expected_ps) <= 4.0);
}

constexpr std::int64_t kGB = 1'000'000'000;

}  // namespace

TEST_CASE("one flow on one link: latency + size / capacity", "[flow]") {
  // 1 GB on 10 GB/s after 1 us of latency: 100 ms + 1 us.
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::us(1), Bytes(kGB), ends(0));
  e.run();
  CHECK(ends.done(0));
  check_time(ends.at.at(0), 0.1 + 1e-6);
  CHECK(net.link_bytes()[fwd(0)] == Approx(1e9));
  CHECK(net.link_bytes()[Topology::directed(0, true)] == 0.0);  // the other direction is free
}

TEST_CASE("two flows share a link equally and end together", "[flow]") {
  // Each gets 5 GB/s: 1 GB each finishes at 200 ms.
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  const FlowId a = net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(0));
  const FlowId b = net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(1));
  e.run(Time::ms(1));
  CHECK(net.rate(a) == Approx(5e9));
  CHECK(net.rate(b) == Approx(5e9));
  e.run();
  check_time(ends.at.at(0), 0.2);
  check_time(ends.at.at(1), 0.2);
}

TEST_CASE("opposite directions of a full-duplex link do not share", "[flow]") {
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(0));
  net.start({Topology::directed(0, true)}, Time::zero(), Bytes(kGB), ends(1));
  e.run();
  check_time(ends.at.at(0), 0.1);
  check_time(ends.at.at(1), 0.1);
}

TEST_CASE("three flows on two links: max-min, then redistribution", "[flow]") {
  // L1 = 10 GB/s, L2 = 4 GB/s. A crosses L1 and L2 (1 GB), B only L1 (1 GB),
  // C only L2 (0.2 GB).
  // Max-min: L2 is the bottleneck, A = C = 2; B takes the rest of L1: 8.
  // C ends at 0.2 / 2 = 100 ms. Then A = 4 (L2 alone), B = 6: at 100 ms A
  // has 0.8 GB left, B 0.2 GB; B ends at 100 + 0.2/6 s = 133.33 ms. A keeps
  // 4 GB/s (L2) and ends when its 1 GB is through: 0.2 + 4 × (t - 0.1) = 1
  // -> t = 300 ms.
  const Topology t = chain({10, 4});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  const FlowId a = net.start({fwd(0), fwd(1)}, Time::zero(), Bytes(kGB), ends(0));
  const FlowId b = net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(1));
  const FlowId c = net.start({fwd(1)}, Time::zero(), Bytes(kGB / 5), ends(2));
  e.run(Time::ms(1));
  CHECK(net.rate(a) == Approx(2e9));
  CHECK(net.rate(b) == Approx(8e9));
  CHECK(net.rate(c) == Approx(2e9));
  e.run(Time::ms(101));
  CHECK(ends.done(2));
  CHECK(net.rate(a) == Approx(4e9));
  CHECK(net.rate(b) == Approx(6e9));
  e.run();
  check_time(ends.at.at(2), 0.1);
  check_time(ends.at.at(1), 0.1 + 0.2 / 6);
  check_time(ends.at.at(0), 0.3);
  CHECK(net.link_bytes()[fwd(0)] == Approx(2e9));    // A + B
  CHECK(net.link_bytes()[fwd(1)] == Approx(1.2e9));  // A + C
}

TEST_CASE("staggered starts and ends", "[flow]") {
  // A: 1 GB from t=0 on 10 GB/s. B: 0.25 GB from t=50 ms. A alone moves
  // 0.5 GB by 50 ms; then 5 GB/s each: B ends at 100 ms, A has 0.25 GB
  // left, alone again at 10 GB/s: A ends at 125 ms.
  const Topology t = chain({10});
  kernel::Engine e;
  Actions act(e);
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(0));
  FlowId b = 0;
  act.at(Time::ms(50), [&] { b = net.start({fwd(0)}, Time::zero(), Bytes(kGB / 4), ends(1)); });
  e.run();
  check_time(ends.at.at(1), 0.1);
  check_time(ends.at.at(0), 0.125);
}

TEST_CASE("a small message is latency-dominated", "[flow]") {
  // 8 B at 25 GB/s after 5 us: 5 us + 0.32 ns = 5,000,320 ps.
  const Topology t = chain({25});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::us(5), Bytes(8), ends(0));
  e.run();
  CHECK(ends.at.at(0) == Time::ps(5'000'320));
}

TEST_CASE("a rate cap leaves the rest of the link to others", "[flow]") {
  // Capped at 2 GB/s beside an uncapped flow on 10 GB/s: 2 and 8.
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  const FlowId capped = net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(0), Bandwidth::GBps(2));
  const FlowId free = net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(1));
  e.run(Time::ms(1));
  CHECK(net.rate(capped) == Approx(2e9));
  CHECK(net.rate(free) == Approx(8e9));
  // The free flow ends at 125 ms; then the capped one stays at 2 GB/s:
  // 0.25 GB by then, 0.75 GB more takes 375 ms -> 500 ms.
  e.run();
  check_time(ends.at.at(1), 0.125);
  check_time(ends.at.at(0), 0.5);
}

TEST_CASE("zero-byte and zero-hop flows complete after their latency", "[flow]") {
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::us(3), Bytes(0), ends(0));
  net.start(std::vector<DirLinkId>{}, Time::us(2), Bytes(kGB), ends(1));
  e.run();
  CHECK(ends.at.at(0) == Time::us(3));
  CHECK(ends.at.at(1) == Time::us(2));
}

TEST_CASE("a completion callback can start the next flow", "[flow]") {
  // Two 0.5 GB transfers back to back on 10 GB/s: 50 ms + 50 ms. The
  // second is started from the first one's notification and may reuse its
  // id; the network then holds one flow slot, not two.
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  ends.then = [&](std::uint64_t tag, Time) {
    if (tag == 0) net.start({fwd(0)}, Time::zero(), Bytes(kGB / 2), ends(1));
  };
  net.start({fwd(0)}, Time::zero(), Bytes(kGB / 2), ends(0));
  e.run();
  check_time(ends.at.at(1), 0.1);
  CHECK(net.flows_started() == 2);
  CHECK(net.slots() == 1);
}

TEST_CASE("simultaneous changes are batched into one solve", "[flow]") {
  // 100 flows starting at the same instant cause one solve, not 100.
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  for (std::uint64_t i = 0; i < 100; ++i) net.start({fwd(0)}, Time::zero(), Bytes(kGB / 100), ends(i));
  e.run(Time::zero());
  CHECK(net.group_stats().solves == 1);
  e.run();
  // All equal: they also end together, one more solve.
  CHECK(net.group_stats().solves == 2);
  check_time(ends.at.at(99), 0.1);
}

TEST_CASE("flows started from a completion at the same instant share its solve", "[flow]") {
  // At 50 ms flow 0 ends; its notification starts flows 1 and 2 with zero
  // latency (activations queued behind the completion at the same time).
  // The instant has one solve that sees both: 5 GB/s each, so 0.25 GB
  // each takes 50 ms more. Solves: t=0 and t=50 ms, then one at 100 ms.
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  ends.then = [&](std::uint64_t tag, Time) {
    if (tag != 0) return;
    net.start({fwd(0)}, Time::zero(), Bytes(kGB / 4), ends(1));
    net.start({fwd(0)}, Time::zero(), Bytes(kGB / 4), ends(2));
  };
  net.start({fwd(0)}, Time::zero(), Bytes(kGB / 2), ends(0));
  e.run();
  check_time(ends.at.at(1), 0.1);
  check_time(ends.at.at(2), 0.1);
  CHECK(net.group_stats().solves == 3);
}

TEST_CASE("a rate change moves the completion in place", "[flow]") {
  // Flow a alone at 10 GB/s, then 99 more flows join it one after another
  // (1 us apart), each move of a's completion replacing its pending event:
  // at most one event per flow is ever pending, so the queue never holds
  // more than 100 + the 99 start events.
  const Topology t = chain({10});
  kernel::Engine e;
  Actions act(e);
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(0));
  for (std::uint64_t i = 1; i < 100; ++i)
    act.at(Time::us(static_cast<std::int64_t>(i)),
           [&net, &ends, i] { net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(i)); });
  std::size_t most = 0;
  while (e.step()) most = std::max(most, e.events_pending());
  CHECK(most <= 199);
  CHECK(ends.at.size() == 100);
}

TEST_CASE("a completion that a slower rate moves later fires early once and is set again", "[flow]") {
  // a (1 GB) alone on 10 GB/s is due at 100 ms. At 50 ms b (1 GB) joins:
  // a's 0.5 GB left at 5 GB/s take it to 150 ms. Its timer is not moved
  // later: it fires at 100 ms, finds nothing done and is set to 150 ms.
  // Then b, alone again with 0.5 GB left at 10 GB/s, is done at 200 ms.
  // Events: the action at 50 ms, a's and b's activations, a's early
  // firing, and a's and b's completions.
  const Topology t = chain({10});
  kernel::Engine e;
  Actions act(e);
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(0));
  act.at(Time::ms(50), [&] { net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(1)); });
  e.run();
  check_time(ends.at.at(0), 0.150);
  check_time(ends.at.at(1), 0.200);
  CHECK(e.events_processed() == 6);
}

TEST_CASE("a flow that weighs a link twice gets half of it", "[flow]") {
  // One 10 GB/s link. Flow a weighs it 2 (moves 2 bytes on it per byte of
  // progress), flow b weighs it 1: both rise to the level L with
  // 2L + L = 10 GB/s, L = 3.33 GB/s. Both move 1 GB, so both end at 0.3 s;
  // the link carried 2 GB for a and 1 GB for b.
  const Topology t = chain({10});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(0), std::nullopt, {2.0});
  net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(1));
  e.run();
  check_time(ends.at.at(0), 0.3);
  check_time(ends.at.at(1), 0.3);
  net.settle();
  CHECK(net.link_bytes()[fwd(0)] == Approx(3e9));
}

TEST_CASE("a weighted flow over two links is paced by its heaviest", "[flow]") {
  // Links of 10 and 20 GB/s, weights 1 and 4: the rate is min(10/1, 20/4)
  // = 5 GB/s, so 1 GB takes 200 ms and the second link carries 4 GB.
  const Topology t = chain({10, 20});
  kernel::Engine e;
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0), fwd(1)}, Time::zero(), Bytes(kGB), ends(0), std::nullopt, {1.0, 4.0});
  e.run();
  check_time(ends.at.at(0), 0.2);
  net.settle();
  CHECK(net.link_bytes()[fwd(0)] == Approx(1e9));
  CHECK(net.link_bytes()[fwd(1)] == Approx(4e9));
}

TEST_CASE("link timelines record every change of a link's total rate, on links that limit nobody too",
          "[flow]") {
  // X = 10 GB/s carries a (1 GB, also over Y = 100 GB/s) and b (0.5 GB):
  // 5 GB/s each, b done at 0.1 s; a then has 0.5 GB left at 10 GB/s, done
  // at 0.15 s. Y limits nobody; its rate follows a's: 5, then 10, then 0.
  const Topology t = chain({10, 100});
  kernel::Engine e;
  FlowNetwork net(e, t);
  net.record_timeline(true);
  FlowEnds ends;
  net.start({fwd(0), fwd(1)}, Time::zero(), Bytes(kGB), ends(0));
  net.start({fwd(0)}, Time::zero(), Bytes(kGB / 2), ends(1));
  e.run();
  check_time(ends.at.at(1), 0.1);
  check_time(ends.at.at(0), 0.15);
  const auto& y = net.timeline()[fwd(1)];
  REQUIRE(y.size() == 3);
  CHECK(y[0].at == Time::zero());
  CHECK(y[0].bytes_per_second == Approx(5e9));
  CHECK(y[1].at == ends.at.at(1));
  CHECK(y[1].bytes_per_second == Approx(10e9));
  CHECK(y[2].at == ends.at.at(0));
  CHECK(y[2].bytes_per_second == 0.0);
  const auto& x = net.timeline()[fwd(0)];
  REQUIRE(x.size() == 2);
  CHECK(x[0].bytes_per_second == Approx(10e9));
  CHECK(x[1].at == ends.at.at(0));
  CHECK(x[1].bytes_per_second == 0.0);
}

TEST_CASE("a group that loses a member while its rate stays still completes the rest on time", "[flow]") {
  // X = 3 GB/s carries a (1 GB), b and c (3 GB each): 1 GB/s each, a done
  // at 1 s. At that instant, after a, d (3 GB) starts over X and Z = 1
  // GB/s: every flow still runs at 1 GB/s, so X's rate does not move while
  // it loses a and gains d (limited by Z or by X: a tie; path order `zx`
  // sets which link d meets first). b and c are done at 3 s; d, alone on
  // Z, at 4 s.
  const bool zx = GENERATE(false, true);
  const Topology t = chain({3, 1});
  kernel::Engine e;
  Actions act(e);
  FlowNetwork net(e, t);
  FlowEnds ends;
  net.start({fwd(0)}, Time::zero(), Bytes(kGB), ends(0));
  net.start({fwd(0)}, Time::zero(), Bytes(3 * kGB), ends(1));
  net.start({fwd(0)}, Time::zero(), Bytes(3 * kGB), ends(2));
  // Started at 0.5 s with 0.5 s of latency: its activation is queued after a's completion timer.
  act.at(Time::ms(500), [&] {
    const std::vector<DirLinkId> path = zx ? std::vector{fwd(1), fwd(0)} : std::vector{fwd(0), fwd(1)};
    net.start(path, Time::ms(500), Bytes(3 * kGB), ends(3));
  });
  e.run();
  check_time(ends.at.at(0), 1.0);
  check_time(ends.at.at(1), 3.0);
  check_time(ends.at.at(2), 3.0);
  check_time(ends.at.at(3), 4.0);
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
  kernel::Engine e;
  FlowNetwork net(e, t);
  const std::vector<topology::DirLinkId> path{topology::Topology::directed(0, false)};
  FlowEnds ends;
  net.start(path, Time::zero(), Bytes(10), ends(0));
  std::uint64_t next = 1;
  // Each one-byte flow's end starts the next one 1/3 s later.
  Actions act(e);
  ends.then = [&](std::uint64_t, Time) {
    if (!ends.done(0))
      act.at(e.after(kernel::duration_up(1.0 / 3)),
             [&] { net.start(path, Time::zero(), Bytes(1), ends(next++)); });
  };
  net.start(path, Time::zero(), Bytes(1), ends(next++));
  e.run();
  const Time end = ends.at.at(0);
  INFO("a ends at " << end.count_ps() << " ps");
  CHECK(end >= Time::s(5) - Time::ps(1));
  CHECK(end <= Time::s(5) + Time::ps(20));
}
