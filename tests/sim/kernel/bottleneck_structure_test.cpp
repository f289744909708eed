#include "sim/kernel/bottleneck_structure.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "sim/kernel/maxmin.h"
#include "tests/sim/kernel/max_min_agreement.h"

using namespace meshsim;
using namespace meshsim::sim::kernel;

namespace {

using Index = BottleneckStructure::FlowIndex;

Index add(BottleneckStructure& s, std::vector<std::uint32_t> links, std::vector<double> weights = {},
          double cap = 0) {
  return s.add(links, weights, cap);
}

}  // namespace

TEST_CASE("flows on one link share it equally, and removing one gives the rest its share", "[bottleneck]") {
  // L0 = 9 carries a, b, c: 3 each. Without b: 4.5 each. Without all:
  // the link limits no one and its level is +∞.
  BottleneckStructure s({9.0});
  const Index a = add(s, {0});
  const Index b = add(s, {0});
  const Index c = add(s, {0});
  s.solve();
  for (Index f : {a, b, c}) CHECK(close(s.rate(f), 3.0));
  s.remove(b);
  s.solve();
  CHECK(close(s.rate(a), 4.5));
  CHECK(close(s.rate(c), 4.5));
  s.remove(a);
  s.remove(c);
  s.solve();
  CHECK(std::isinf(s.level(0)));
  CHECK(s.active() == 0);
}

TEST_CASE("three saturation levels, and how a removal and an addition move them", "[bottleneck]") {
  // L0 = 2: a, b; L1 = 7: b, c, d; L2 = 20: d, e. L0 fills first at 1
  // (a, b); L1 then has 7 − 1 = 6 for c, d: 3; L2 has 20 − 3 = 17 for e.
  BottleneckStructure s({2.0, 7.0, 20.0});
  const Index a = add(s, {0});
  const Index b = add(s, {0, 1});
  const Index c = add(s, {1});
  const Index d = add(s, {1, 2});
  const Index e = add(s, {2});
  s.solve();
  CHECK(close(s.rate(a), 1.0));
  CHECK(close(s.rate(b), 1.0));
  CHECK(close(s.rate(c), 3.0));
  CHECK(close(s.rate(d), 3.0));
  CHECK(close(s.rate(e), 17.0));
  CHECK(s.bottleneck(b) == 0);
  CHECK(s.bottleneck(d) == 1);
  CHECK(disagreements(s) == 0);
  // Without a: L0 would give b 2, L1 gives 7/3 to b, c, d; b stays at L0
  // with 2, c and d share 5: 2.5; e gets 17.5. Every level moved.
  s.remove(a);
  s.solve();
  CHECK(close(s.rate(b), 2.0));
  CHECK(close(s.rate(c), 2.5));
  CHECK(close(s.rate(e), 17.5));
  CHECK(s.level_changes().size() == 3);
  // f {L2} joins e and d on L2: L2 would give (20 − 2.5) / 2 = 8.75 > 2.5,
  // so only e (and f) slow down: 8.75 each; L0 and L1 keep their levels.
  const Index f = add(s, {2});
  s.solve();
  CHECK(close(s.rate(e), 8.75));
  CHECK(close(s.rate(f), 8.75));
  CHECK(close(s.rate(c), 2.5));
  CHECK(s.level_changes().size() == 1);
  CHECK(disagreements(s) == 0);
}

TEST_CASE("a flow moves to the link that now limits it", "[bottleneck]") {
  // X = 10: a, b; Y = 4: a. Y limits a at 4, b takes 6 of X.
  BottleneckStructure s({10.0, 4.0});
  const Index a = add(s, {0, 1});
  const Index b = add(s, {0});
  s.solve();
  CHECK(s.bottleneck(a) == 1);
  CHECK(close(s.rate(a), 4.0));
  CHECK(close(s.rate(b), 6.0));
  // d {X}: X would give a, b, d 10/3 < 4, so X limits a now.
  const Index d = add(s, {0});
  s.solve();
  CHECK(s.bottleneck(a) == 0);
  for (Index f : {a, b, d}) CHECK(close(s.rate(f), 10.0 / 3));
  REQUIRE(s.moves().size() == 2);  // d joined, a moved from Y
  CHECK(std::isinf(s.level(1)));   // Y limits no one
  // Without d, Y limits a again.
  s.remove(d);
  s.solve();
  CHECK(s.bottleneck(a) == 1);
  CHECK(close(s.rate(b), 6.0));
  CHECK(disagreements(s) == 0);
}

TEST_CASE("weights scale what a flow uses, not its rate, and caps limit like a link of their own",
          "[bottleneck]") {
  // L0 = 9: a weighs 2, b 1. One level t: 2t + t = 9, t = 3; a uses 6.
  BottleneckStructure s({9.0, 10.0});
  const Index a = add(s, {0}, {2.0});
  const Index b = add(s, {0});
  s.solve();
  CHECK(close(s.rate(a), 3.0));
  CHECK(close(s.rate(b), 3.0));
  CHECK(close(s.load(0), 9.0));
  // L1 = 10: c capped at 2 runs at its cap, d takes the other 8; a cap of
  // 7 does not bind (5 each).
  const Index c = add(s, {1}, {}, 2.0);
  const Index d = add(s, {1});
  s.solve();
  CHECK(close(s.rate(c), 2.0));
  CHECK(close(s.rate(d), 8.0));
  CHECK(s.bottleneck(c) >= s.link_count());
  s.remove(c);
  const Index e = add(s, {1}, {}, 7.0);
  s.solve();
  CHECK(close(s.rate(e), 5.0));
  CHECK(close(s.rate(d), 5.0));
  CHECK(s.bottleneck(e) == 1);
  CHECK(disagreements(s) == 0);
}

TEST_CASE("a link that carries no more than another is left out until a flow of its own joins",
          "[bottleneck]") {
  // L0 and L1 both 10 (L0 the lower index); a and b cross both: L1
  // carries what L0 does and is left out. c crosses L1 alone: L1 joins,
  // and limits b, c... all three at 10/3 on L1, L0 carries 20/3.
  BottleneckStructure s({10.0, 10.0});
  const Index a = add(s, {0, 1});
  const Index b = add(s, {1, 0});
  s.solve();
  CHECK(s.kept(0));
  CHECK_FALSE(s.kept(1));
  CHECK(close(s.rate(a), 5.0));
  CHECK(close(s.load(1), 10.0));
  const Index c = add(s, {1});
  s.solve();
  CHECK(s.kept(1));
  CHECK(s.stats().joins == 1);
  for (Index f : {a, b, c}) CHECK(close(s.rate(f), 10.0 / 3));
  CHECK(disagreements(s) == 0);
}

TEST_CASE("a link that limits nobody looks again when a level rises past its allowance", "[bottleneck]") {
  // X = 10: a, b at 5; Y = 8 carries a only and limits nobody: it counts
  // a at 5 and allows it 3 more. Without b, X would give a 10 > 5 + 3:
  // the alarm trips, Y finds itself over capacity and takes a in at 8.
  BottleneckStructure s({10.0, 8.0});
  const Index a = add(s, {0, 1});
  const Index b = add(s, {0});
  s.solve();
  CHECK(s.bottleneck(a) == 0);
  CHECK(std::isinf(s.level(1)));
  CHECK(close(s.rate(a), 5.0));
  const std::uint64_t trips = s.stats().trips;
  s.remove(b);
  s.solve();
  CHECK(s.stats().trips == trips + 1);
  CHECK(s.bottleneck(a) == 1);
  CHECK(close(s.rate(a), 8.0));
  CHECK(std::isinf(s.level(0)));
  CHECK(disagreements(s) == 0);
}

TEST_CASE("a flow alone on its links stays out of the lists until another flow joins one of them",
          "[bottleneck]") {
  // L0 = 10, L1 = 4, L2 = 10. a over L0, L1 and b over L2 start alone: a
  // at 4 (limited by L1), b at 10. c over L1, L2 brings both in: a and c
  // share L1 at 2 each, b takes the 8 c leaves on L2. Without c, a and b
  // are back at 4 and 10, as without the shortcut.
  for (const bool shortcut : {true, false}) {
    INFO("flows alone: " << shortcut);
    BottleneckStructure s({10.0, 4.0, 10.0});
    if (!shortcut) s.no_flows_alone();
    const Index a = add(s, {0, 1});
    const Index b = add(s, {2});
    s.solve();
    CHECK(s.stats().alone == (shortcut ? 2 : 0));
    CHECK(s.bottleneck(a) == 1);
    CHECK(close(s.rate(a), 4.0));
    CHECK(close(s.rate(b), 10.0));
    CHECK(close(s.load(0), 4.0));
    const Index c = add(s, {1, 2});
    s.solve();
    CHECK(s.stats().brought == (shortcut ? 2 : 0));
    CHECK(close(s.rate(a), 2.0));
    CHECK(close(s.rate(c), 2.0));
    CHECK(close(s.rate(b), 8.0));
    CHECK(close(s.load(2), 10.0));
    CHECK(disagreements(s) == 0);
    s.remove(c);
    s.solve();
    CHECK(close(s.rate(a), 4.0));
    CHECK(close(s.rate(b), 10.0));
    CHECK(disagreements(s) == 0);
  }
  // Alone, a flow is limited where it would be in the lists: over L1, L0
  // of equal capacity 10, L1 would be left out behind L0 (the lower
  // index), so L0 limits it. Weighted 2 on L0 = 10 and 1 on L1 = 8, L0's
  // level 10 / 2 = 5 is the lower one: it runs at 5, and L0 carries 10.
  BottleneckStructure tie({10.0, 10.0});
  const Index t = add(tie, {1, 0});
  tie.solve();
  CHECK(tie.bottleneck(t) == 0);
  CHECK(close(tie.rate(t), 10.0));
  BottleneckStructure weighted({10.0, 8.0});
  const Index w = add(weighted, {0, 1}, {2.0, 1.0});
  weighted.solve();
  CHECK(weighted.bottleneck(w) == 0);
  CHECK(close(weighted.rate(w), 5.0));
  CHECK(close(weighted.load(0), 10.0));
  CHECK(close(weighted.load(1), 5.0));
  CHECK(disagreements(weighted) == 0);
}

TEST_CASE("random batches of flows: rates after every solve equal a from-scratch filling", "[bottleneck]") {
  // 300 random networks of 3-30 links, capacities drawn from a few values
  // (ties are common, and chains of equal links are left out), each taken
  // through 60 batches: 1-4 flows added over 1-6 links (a quarter
  // weighted, a fifth capped), and up to 3 removed. After every solve the
  // rates must equal max_min_rates (1e-9 relative) and pass check_max_min
  // and the structure's own check. One network in five keeps all links;
  // one batch in twenty adds 80 flows at once (solved afresh).
  std::mt19937_64 rng(20261124);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double caps[] = {1e9, 2e9, 2e9, 4e9, 10e9, 1e9 * (1 + 9 * unit(rng))};
  int bad = 0;
  int solves = 0;
  BottleneckStructure::Stats total;
  for (int net = 0; net < 300; ++net) {
    const auto nl = static_cast<std::uint32_t>(3 + rng() % 28);
    std::vector<double> capacity;
    for (std::uint32_t l = 0; l < nl; ++l)
      capacity.push_back(caps[rng() % 6] * (rng() % 4 == 0 ? unit(rng) + 0.5 : 1));
    BottleneckStructure s(capacity);
    if (net % 5 == 0) s.keep_all_links();
    std::vector<Index> live;
    for (int batch = 0; batch < 60; ++batch) {
      const int adds = batch % 20 == 19 ? 80 : 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < adds; ++k) {
        std::vector<std::uint32_t> links;
        for (std::uint64_t h = 0, len = 1 + rng() % 6; h < len; ++h) {
          const auto l = static_cast<std::uint32_t>(rng() % nl);
          if (std::find(links.begin(), links.end(), l) == links.end()) links.push_back(l);
        }
        std::vector<double> weights;
        if (rng() % 4 == 0)
          for (std::size_t h = 0; h < links.size(); ++h) weights.push_back(0.5 + 3 * unit(rng));
        const double cap = rng() % 5 == 0 ? 1e9 * (0.1 + 3 * unit(rng)) : 0.0;
        live.push_back(s.add(links, weights, cap));
      }
      for (int k = 0, n = static_cast<int>(rng() % 4); k < n && !live.empty(); ++k) {
        const std::size_t i = rng() % live.size();
        s.remove(live[i]);
        live[i] = live.back();
        live.pop_back();
      }
      s.solve();
      ++solves;
      bad += disagreements(s);
    }
    const auto& st = s.stats();
    total.moves += st.moves;
    total.takes += st.takes;
    total.joins += st.joins;
    total.trips += st.trips;
    total.rebuilds += st.rebuilds;
    total.alone += st.alone;
    total.brought += st.brought;
  }
  CHECK(solves >= 10'000);
  CHECK(bad == 0);
  // Every kind of repair was taken.
  CHECK(total.moves > 0);
  CHECK(total.takes > 0);
  CHECK(total.joins > 0);
  CHECK(total.trips > 0);
  CHECK(total.rebuilds > 0);
  CHECK(total.alone > 0);
  CHECK(total.brought > 0);
}
