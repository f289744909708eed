#include "sim/maxmin_incremental.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include <catch2/catch.hpp>

#include "sim/maxmin.h"

using namespace meshsim;
using namespace meshsim::sim;

namespace {

using Index = IncrementalMaxMin::FlowIndex;

// max_min_rates of the active flows of `s`, by flow id.
std::map<Index, double> reference(const IncrementalMaxMin& s) {
  const IncrementalMaxMin::Snapshot snap = s.snapshot();
  const auto rates = max_min_rates(snap.problem);
  std::map<Index, double> out;
  for (std::size_t i = 0; i < snap.flows.size(); ++i) out[snap.flows[i]] = rates[i];
  return out;
}

bool close(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

Index add(IncrementalMaxMin& s, std::vector<std::uint32_t> links, double cap = 0) {
  return s.add(links, {}, cap);
}

}  // namespace

TEST_CASE("a new flow re-rates its link and what that link frees, nothing else", "[maxmin]") {
  // Links L0 = 10, L1 = 4, L2 = 6. Flows a {L0}, b {L0, L1}, c {L1}, e {L2}.
  // L1 is the first to fill: b = c = 2; then a = 10 − 2 = 8 on L0; e = 6
  // alone on L2. Adding d {L1}: L1 splits 4 three ways, b = c = d = 4/3,
  // and L0 gives a the rest, 10 − 4/3 = 26/3. e shares no link with them:
  // it is not re-rated.
  IncrementalMaxMin s({10, 4, 6});
  const Index a = add(s, {0});
  const Index b = add(s, {0, 1});
  const Index c = add(s, {1});
  const Index e = add(s, {2});
  s.solve();
  CHECK(s.rate(a) == Approx(8));
  CHECK(s.rate(b) == Approx(2));
  CHECK(s.rate(c) == Approx(2));
  CHECK(s.rate(e) == Approx(6));
  CHECK(s.changed().size() == 4);  // every new flow gets its first rate
  const Index d = add(s, {1});
  s.solve();
  CHECK(s.rate(b) == Approx(4.0 / 3));
  CHECK(s.rate(c) == Approx(4.0 / 3));
  CHECK(s.rate(d) == Approx(4.0 / 3));
  CHECK(s.rate(a) == Approx(26.0 / 3));
  CHECK(s.rate(e) == Approx(6));
  std::vector<Index> changed;
  for (const auto& ch : s.changed()) changed.push_back(ch.flow);
  std::sort(changed.begin(), changed.end());
  CHECK(changed == std::vector<Index>{a, b, c, d});
  CHECK(s.load(0) == Approx(10));
  CHECK(s.load(1) == Approx(4));
}

TEST_CASE("a removal frees its links for the flows bottlenecked there", "[maxmin]") {
  // Links L0 = 10, L1 = 4. a {L0, L1}, b {L1}, c {L0}: L1 fills first,
  // a = b = 2, then c = 8. Removing b: a alone on L1 rises to 4, and L0
  // gives c 10 − 4 = 6. The removed flow's id is handed out again.
  IncrementalMaxMin s({10, 4});
  const Index a = add(s, {0, 1});
  const Index b = add(s, {1});
  const Index c = add(s, {0});
  s.solve();
  CHECK(s.rate(c) == Approx(8));
  s.remove(b);
  s.solve();
  CHECK(s.rate(a) == Approx(4));
  CHECK(s.rate(c) == Approx(6));
  CHECK(s.active() == 2);
  CHECK(add(s, {1}) == b);
}

TEST_CASE("a change that climbs several levels is followed to the top", "[maxmin]") {
  // A staircase: link k (capacity k + 1) is shared by flow k (on links k
  // and k + 1) and flow k − 1. Each flow's rate depends on the one below,
  // so a new flow on link 0 moves every rate above it: the repair must
  // widen the region until it reaches the last link, and still agree with
  // a filling of everything.
  constexpr std::uint32_t kLinks = 12;
  std::vector<double> cap;
  for (std::uint32_t k = 0; k < kLinks; ++k) cap.push_back(static_cast<double>(k + 1));
  IncrementalMaxMin s(cap);
  for (std::uint32_t k = 0; k + 1 < kLinks; ++k) add(s, {k, k + 1});
  add(s, {kLinks - 1});
  s.solve();
  add(s, {0});
  s.solve();
  for (const auto& [f, r] : reference(s)) {
    INFO("flow " << f);
    CHECK(close(s.rate(f), r));
  }
  CHECK(s.changed().size() >= kLinks - 1);
}

TEST_CASE("10,000 random batches: the kept rates equal a filling of everything", "[maxmin]") {
  // 200 random networks (3-20 links of capacity 1-100); each goes through
  // 50 batches of 1-4 additions (1-4 links, sometimes weighted, sometimes
  // capped) and 0-3 removals, then a solve. After every solve each active
  // flow's rate equals max_min_rates on the same flows (1e-9 relative),
  // and every flow whose rate moved is listed in changed().
  std::mt19937_64 rng(20261124);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int disagreements = 0;
  int batches = 0;
  std::uint64_t rounds = 0;
  for (int net = 0; net < 200; ++net) {
    const auto links = static_cast<std::uint32_t>(3 + rng() % 18);
    std::vector<double> capacity;
    for (std::uint32_t l = 0; l < links; ++l) capacity.push_back(1 + 99 * unit(rng));
    IncrementalMaxMin s(capacity);
    std::vector<Index> live;
    for (int batch = 0; batch < 50; ++batch) {
      std::map<Index, double> before;
      for (Index f : live) before[f] = s.rate(f);
      const auto removals = std::min<std::size_t>(rng() % 4, live.size());
      for (std::size_t k = 0; k < removals; ++k) {
        const std::size_t at = rng() % live.size();
        s.remove(live[at]);
        before.erase(live[at]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
      }
      for (std::uint64_t k = 0, n = 1 + rng() % 4; k < n; ++k) {
        std::vector<std::uint32_t> path;
        for (std::uint64_t h = 0, len = 1 + rng() % 4; h < len; ++h) {
          const auto l = static_cast<std::uint32_t>(rng() % links);
          if (std::find(path.begin(), path.end(), l) == path.end()) path.push_back(l);
        }
        std::vector<double> w;
        if (rng() % 4 == 0)
          for (std::size_t h = 0; h < path.size(); ++h) w.push_back(0.5 + 3 * unit(rng));
        const double cap = rng() % 5 == 0 ? 1 + 30 * unit(rng) : 0.0;
        live.push_back(s.add(path, w, cap));
      }
      s.solve();
      ++batches;
      std::map<Index, bool> listed;
      for (const auto& ch : s.changed()) listed[ch.flow] = true;
      for (const auto& [f, r] : reference(s)) {
        const bool moved = before.count(f) == 0 || !close(before[f], s.rate(f));
        if (!close(s.rate(f), r) || (moved && !listed[f])) ++disagreements;
      }
    }
    rounds += s.stats().rounds;
  }
  CHECK(batches == 10'000);
  CHECK(disagreements == 0);
  CHECK(rounds >= 10'000);  // at least one filling per batch: the checks did run
}

TEST_CASE("merging two flows of one bottleneck keeps every rate", "[maxmin]") {
  // L0 = 10 carries a {L0} and b {L0, L1} (L1 = 100): both 5, frozen at
  // L0. Merged, they are one flow weighing 2 on L0 and 1 on L1, still at
  // 5, and L0 still carries 10. Then c {L0} starts: the merged flow and c
  // rise together until 2r + r = 10, r = 10/3.
  IncrementalMaxMin s({10.0, 100.0});
  const Index a = add(s, {0});
  const Index b = add(s, {0, 1});
  s.solve();
  REQUIRE(s.bottleneck(a) == 0);
  REQUIRE(s.bottleneck(b) == 0);
  s.merge(a, b);
  CHECK(s.active() == 1);
  CHECK(close(s.rate(a), 5.0));
  CHECK(close(s.load(0), 10.0));
  CHECK(close(s.load(1), 5.0));
  const Index c = add(s, {0});
  s.solve();
  CHECK(close(s.rate(a), 10.0 / 3));
  CHECK(close(s.rate(c), 10.0 / 3));
  CHECK(close(s.load(1), 10.0 / 3));
  for (const auto& [f, r] : reference(s)) CHECK(close(s.rate(f), r));
}
