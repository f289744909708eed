#include "sim/flow_groups.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include <catch2/catch.hpp>

#include "sim/maxmin.h"
#include "sim/numeric.h"

using namespace meshsim;
using namespace meshsim::sim;

namespace {

using Index = FlowGroups::FlowIndex;

bool close(double a, double b, double rel = 1e-9) {
  return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

// The groups' rates against max_min_rates and check_max_min on the same
// flows: the number of flows whose rate disagrees (1e-9 relative), or 1
// when the optimality check fails.
int disagreements(const FlowGroups& g) {
  const FlowGroups::Snapshot s = g.snapshot();
  if (check_max_min(s.problem, s.rates)) return 1;
  const auto ref = max_min_rates(s.problem);
  int bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) bad += close(s.rates[i], ref[i]) ? 0 : 1;
  return bad;
}

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
// solve, and adds up the groups' counters; returns each flow's end.
std::vector<Time> run_grouped(const std::vector<double>& capacity, const std::vector<Start>& starts,
                              bool track_all, int& bad_rates, FlowGroups::Stats& total) {
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
    bad_rates += disagreements(g);
    for (const FlowGroups::GroupIndex x : g.touched()) {
      if (due.size() <= x) due.resize(x + 1, Time::max());
      due[x] = g.next_done(x);
    }
  }
  total.solves += g.stats().solves;
  total.splits += g.stats().splits;
  total.merges += g.stats().merges;
  total.tracks += g.stats().tracks;
  total.untracks += g.stats().untracks;
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

TEST_CASE("flows behind one bottleneck are one group, and a link nobody can fill is not tracked",
          "[groups]") {
  // L0 = 10 carries a, b, c, which also cross L1 = 100. L0 is the tightest
  // link of the first flow, so it is tracked; the three share it at 10/3
  // each, so L1 carries 10 of its 100 and its bound (100/3 per flow) holds.
  FlowGroups g({10.0, 100.0});
  const Index a = add(g, {0, 1});
  const Index b = add(g, {0, 1});
  const Index c = add(g, {0, 1});
  g.solve(Time::zero());
  CHECK(g.groups() == 1);
  CHECK(g.stats().merges == 2);
  CHECK(g.tracked(0));
  CHECK_FALSE(g.tracked(1));
  for (Index f : {a, b, c}) CHECK(close(g.rate(f), 10.0 / 3));
  CHECK(g.group_of(a) == g.group_of(c));
  CHECK(disagreements(g) == 0);
}

TEST_CASE("a newly limiting link is tracked and splits the group it limits in part", "[groups]") {
  // a, b {L0} and c {L0, L1}: one group at 10/3 on L0 = 10 (L1 = 4 is not
  // tracked: 4 per flow). At 1 ms d {L1} starts: L1 is its only link, so
  // it is tracked, and the group, weighing 1 on L1 through c, first fills
  // L1 at 2 (with d). Only c crosses L1: c and d stay at 2, while a and b
  // take the rest of L0, (10 − 2) / 2 = 4.
  FlowGroups g({10.0, 4.0});
  const Index a = add(g, {0});
  const Index b = add(g, {0});
  const Index c = add(g, {0, 1});
  g.solve(Time::zero());
  REQUIRE(g.groups() == 1);
  CHECK_FALSE(g.tracked(1));
  const Index d = g.add(std::vector<std::uint32_t>{1}, {}, 0.0, 1e9, Time::ms(1));
  g.solve(Time::ms(1));
  CHECK(g.tracked(1));
  CHECK(g.stats().splits == 1);
  CHECK(close(g.rate(a), 4.0));
  CHECK(close(g.rate(b), 4.0));
  CHECK(close(g.rate(c), 2.0));
  CHECK(close(g.rate(d), 2.0));
  CHECK(g.group_of(a) == g.group_of(b));
  CHECK(g.group_of(c) == g.group_of(d));  // both frozen at L1: merged
  CHECK(disagreements(g) == 0);
  // c moved 10/3 × 1 ms before the change.
  CHECK(close(g.remaining(c, Time::ms(1)), 1e9 - 10.0 / 3 * 1e-3));
}

TEST_CASE("a member leaves its group when done and the others speed up", "[groups]") {
  // Two flows of 10 and 20 bytes on L0 = 10: 5 each, so the first is done
  // at 2 s; the second then has 10 bytes left at 10/s: done at 3 s.
  FlowGroups g({10.0});
  const Index a = add(g, {0}, 10);
  const Index b = add(g, {0}, 20);
  g.solve(Time::zero());
  REQUIRE(g.groups() == 1);
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
  // start at random times in 10 ms; one in four tracks every link. Run to
  // the end twice: with the groups, checking every solve against
  // max_min_rates and check_max_min; and from scratch, re-solving all
  // flows with max_min_rates at every event. Each flow ends at the same
  // picosecond in both, to the rounding contract (3 ps, plus what the rate
  // tolerance allows: 1e-12 of the time).
  std::mt19937_64 rng(20261123);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int bad_rates = 0;
  int bad_ends = 0;
  FlowGroups::Stats total;
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
    const std::vector<Time> grouped = run_grouped(capacity, starts, net % 4 == 0, bad_rates, total);
    const std::vector<Time> scratch = run_from_scratch(capacity, starts);
    for (std::size_t k = 0; k < starts.size(); ++k) {
      const double a = static_cast<double>(grouped[k].count_ps());
      const double b = static_cast<double>(scratch[k].count_ps());
      if (std::fabs(a - b) > 3 + 1e-12 * b) ++bad_ends;
    }
  }
  CHECK(total.solves >= 10'000);
  // Every way a group changes was taken.
  CHECK(total.splits > 0);
  CHECK(total.merges > 0);
  CHECK(total.tracks > 0);
  CHECK(total.untracks > 0);
  CHECK(bad_rates == 0);
  CHECK(bad_ends == 0);
}
