#include "sim/kernel/flow_groups.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include <catch2/catch.hpp>

#include "sim/kernel/bottleneck_structure.h"
#include "sim/kernel/maxmin.h"
#include "sim/kernel/numeric.h"
#include "tests/sim/kernel/max_min_agreement.h"

using namespace meshsim;
using namespace meshsim::sim::kernel;

namespace {

using Index = FlowGroups::FlowIndex;

Index add(FlowGroups& g, std::vector<std::uint32_t> links, double bytes = 1e9) {
  return g.add(links, {}, 0.0, bytes, Time::zero());
}

// A flow of the random runs: it starts at `at` and moves `bytes`.
struct Start {
  Time at;
  MaxMinFlow flow;
  double bytes = 0;
};

double seconds(Time d) {
  return static_cast<double>(d.count_ps()) / kPsPerSecond;
}

// Runs `starts` (sorted by time) to the end with FlowGroups, as the flow
// network does: completions, then starts, then one solve per instant.
// Counts the flows whose rate disagrees with max_min_rates after each
// solve, and adds up the structure's counters; returns each flow's end.
std::vector<Time> run_grouped(const std::vector<double>& capacity, const std::vector<Start>& starts,
                              bool track_all, int& bad_rates, int& solves,
                              BottleneckStructure::Stats& total) {
  FlowGroups g(capacity);
  if (track_all) g.track_all_links();
  std::vector<Time> end(starts.size(), Time::max());
  std::map<Index, std::size_t> who;
  std::vector<Time> due;  // per group
  std::size_t next = 0;
  for (;;) {
    Time t = next < starts.size() ? starts[next].at : Time::max();
    for (const Time d : due) t = std::min(t, d);
    if (t == Time::max()) break;
    std::vector<Index> done;
    for (FlowGroups::GroupIndex x = 0; x < due.size(); ++x)
      if (due[x] == t) {
        due[x] = Time::max();
        g.take_done(x, t, done);
      }
    for (const Index f : done) end[who.at(f)] = t;
    for (; next < starts.size() && starts[next].at == t; ++next) {
      const Start& s = starts[next];
      who[g.add(s.flow.links, s.flow.weights, s.flow.cap, s.bytes, t)] = next;
    }
    g.solve(t);
    bad_rates += disagreements(g.structure());
    for (const FlowGroups::GroupIndex x : g.touched()) {
      if (due.size() <= x) due.resize(x + 1, Time::max());
      due[x] = g.next_done(x);
    }
  }
  solves += static_cast<int>(g.stats().solves);
  total.moves += g.structure_stats().moves;
  total.takes += g.structure_stats().takes;
  total.joins += g.structure_stats().joins;
  return end;
}

// The same run with every flow re-rated from scratch (max_min_rates) and
// its end recomputed from its remaining bytes at every event.
std::vector<Time> run_from_scratch(const std::vector<double>& capacity, const std::vector<Start>& starts) {
  struct Active {
    std::size_t k;
    double left;
  };
  std::vector<Active> active;
  std::vector<Time> end(starts.size(), Time::max());
  std::size_t next = 0;
  Time now = Time::zero();
  for (;;) {
    MaxMinProblem p{capacity, {}};
    for (const Active& a : active) p.flows.push_back(starts[a.k].flow);
    const std::vector<double> rates = active.empty() ? std::vector<double>{} : max_min_rates(p);
    Time t = next < starts.size() ? starts[next].at : Time::max();
    for (std::size_t i = 0; i < active.size(); ++i)
      t = std::min(t, now + duration_up(active[i].left / rates[i]));
    if (t == Time::max()) break;
    std::vector<Active> still;
    for (std::size_t i = 0; i < active.size(); ++i) {
      if (now + duration_up(active[i].left / rates[i]) <= t)
        end[active[i].k] = t;
      else
        still.push_back({active[i].k, active[i].left - rates[i] * seconds(t - now)});
    }
    active.swap(still);
    for (; next < starts.size() && starts[next].at == t; ++next) active.push_back({next, starts[next].bytes});
    now = t;
  }
  return end;
}

}  // namespace

TEST_CASE("flows behind one bottleneck are one group", "[groups]") {
  // L0 = 10 carries a, b, c, which also cross L1 = 100: L0 limits all
  // three at 10/3, so they are one group, L0's; L1 carries no more than
  // L0 and is left out of the structure.
  FlowGroups g({10.0, 100.0});
  const Index a = add(g, {0, 1});
  const Index b = add(g, {0, 1});
  const Index c = add(g, {0, 1});
  g.solve(Time::zero());
  for (Index f : {a, b, c}) CHECK(close(g.rate(f), 10.0 / 3));
  CHECK(g.group_of(a) == 0);
  CHECK(g.group_of(b) == g.group_of(c));
  CHECK_FALSE(g.structure().kept(1));
  CHECK(g.touched() == std::vector<FlowGroups::GroupIndex>{0});
  CHECK(disagreements(g.structure()) == 0);
}

TEST_CASE("a flow whose bottleneck moves takes its remaining bytes to the new group", "[groups]") {
  // X = 10 GB/s: a, b; Y = 4 GB/s: a. Y limits a at 4 GB/s, X gives b 6.
  // At 1 ms d {X} starts: X gives a, b, d 10/3 GB/s each, so a moves to
  // X's group with 1 GB − 4 MB left (b: 1 GB − 6 MB, d: 1 GB).
  FlowGroups g({10e9, 4e9});
  const Index a = add(g, {0, 1});
  const Index b = add(g, {0});
  g.solve(Time::zero());
  CHECK(g.group_of(a) == 1);
  CHECK(g.group_of(b) == 0);
  const Index d = g.add(std::vector<std::uint32_t>{0}, {}, 0.0, 1e9, Time::ms(1));
  g.solve(Time::ms(1));
  CHECK(g.group_of(a) == 0);
  CHECK(g.group_of(d) == 0);
  CHECK(close(g.remaining(a, Time::ms(1)), 1e9 - 4e6));
  CHECK(close(g.remaining(b, Time::ms(1)), 1e9 - 6e6));
  CHECK(close(g.rate(a), 10e9 / 3));
  // Y's group is empty now: no completion. X's next is b, with the
  // fewest bytes left: (1 GB − 6 MB) / (10/3 GB/s) after 1 ms.
  CHECK(g.next_done(1) == Time::max());
  const Time b_done = Time::ms(1) + duration_up((1e9 - 6e6) / (10e9 / 3));
  CHECK(std::llabs(g.next_done(0).count_ps() - b_done.count_ps()) <= 1);
  CHECK(disagreements(g.structure()) == 0);
}

TEST_CASE("a member leaves its group when done and the others speed up", "[groups]") {
  // Two flows of 10 and 20 bytes on L0 = 10: 5 each, so the first is done
  // at 2 s; the second then has 10 bytes left at 10/s: done at 3 s.
  FlowGroups g({10.0});
  const Index a = add(g, {0}, 10);
  const Index b = add(g, {0}, 20);
  g.solve(Time::zero());
  const FlowGroups::GroupIndex grp = g.group_of(a);
  CHECK(g.next_done(grp) == Time::s(2));
  std::vector<Index> done;
  g.take_done(grp, Time::s(2), done);
  CHECK(done == std::vector<Index>{a});
  g.solve(Time::s(2));
  CHECK(close(g.rate(b), 10.0));
  CHECK(g.next_done(g.group_of(b)) == Time::s(3));
}

TEST_CASE("random networks: group rates are max-min fair and completions match a from-scratch run",
          "[groups]") {
  // 200 random networks (3-20 links of 1-100 GB/s), each with 50 flows of
  // 1 MB-1 GB over 1-4 links (sometimes weighted, sometimes capped) that
  // start at random times in 10 ms; one in four keeps every link in the structure. Run to
  // the end twice: with the groups, checking every solve against
  // max_min_rates and check_max_min; and from scratch, re-solving all
  // flows with max_min_rates at every event. Each flow ends at the same
  // picosecond in both, to the rounding contract (3 ps, plus what the rate
  // tolerance allows: 1e-12 of the time).
  std::mt19937_64 rng(20261123);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int bad_rates = 0;
  int bad_ends = 0;
  int solves = 0;
  BottleneckStructure::Stats total;
  for (int net = 0; net < 200; ++net) {
    const auto links = static_cast<std::uint32_t>(3 + rng() % 18);
    std::vector<double> capacity;
    for (std::uint32_t l = 0; l < links; ++l) capacity.push_back(1e9 * (1 + 99 * unit(rng)));
    std::vector<Start> starts;
    for (int k = 0; k < 50; ++k) {
      Start s{Time::ps(static_cast<std::int64_t>(unit(rng) * 1e10)), {}, 1e6 + 1e9 * unit(rng)};
      for (std::uint64_t h = 0, len = 1 + rng() % 4; h < len; ++h) {
        const auto l = static_cast<std::uint32_t>(rng() % links);
        if (std::find(s.flow.links.begin(), s.flow.links.end(), l) == s.flow.links.end())
          s.flow.links.push_back(l);
      }
      if (rng() % 4 == 0)
        for (std::size_t h = 0; h < s.flow.links.size(); ++h) s.flow.weights.push_back(0.5 + 3 * unit(rng));
      if (rng() % 5 == 0) s.flow.cap = 1e9 * (1 + 30 * unit(rng));
      starts.push_back(std::move(s));
    }
    std::sort(starts.begin(), starts.end(), [](const Start& x, const Start& y) { return x.at < y.at; });
    const std::vector<Time> grouped = run_grouped(capacity, starts, net % 4 == 0, bad_rates, solves, total);
    const std::vector<Time> scratch = run_from_scratch(capacity, starts);
    for (std::size_t k = 0; k < starts.size(); ++k) {
      const double a = static_cast<double>(grouped[k].count_ps());
      const double b = static_cast<double>(scratch[k].count_ps());
      if (std::fabs(a - b) > 3 + 1e-12 * b) ++bad_ends;
    }
  }
  CHECK(solves >= 10'000);
  // Flows moved between groups, links were taken in and joined.
  CHECK(total.moves > 0);
  CHECK(total.takes > 0);
  CHECK(total.joins > 0);
  CHECK(bad_rates == 0);
  CHECK(bad_ends == 0);
}
