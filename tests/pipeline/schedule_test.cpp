#include "pipeline/schedule.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::model;
using namespace meshsim::pipeline;

namespace {

int leading_forwards(const std::vector<PipelineOp>& ops) {
  int k = 0;
  while (k < static_cast<int>(ops.size()) && ops[static_cast<std::size_t>(k)].pass == Pass::forward) ++k;
  return k;
}

std::vector<PassTimes> equal(int stages, PassTimes t) {
  return std::vector<PassTimes>(static_cast<std::size_t>(stages), t);
}

}  // namespace

TEST_CASE("equal stages: GPipe and 1F1B leave a bubble of (n-1)/m", "[pipeline][schedule]") {
  // Forward 1, backward 2 on every stage: the makespan is (m + n - 1) * 3 and
  // each stage is busy m * 3, so idle/busy = (n - 1) / m, for awkward n and m.
  for (auto [n, m] : std::vector<std::pair<int, int>>{{4, 8}, {3, 5}, {6, 12}, {5, 7}, {2, 1}})
    for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::eager_1f1b}) {
      INFO(to_string(s) << " n=" << n << " m=" << m);
      const auto tl = timeline(make_schedule(s, n, m), n, 1, equal(n, {1, 2, 0}));
      CHECK(tl.makespan == Approx(3.0 * (m + n - 1)));
      CHECK(tl.bubble == Approx(static_cast<double>(n - 1) / m));
    }
}

TEST_CASE("interleaving v chunks divides the bubble by v", "[pipeline][schedule]") {
  // Each of v chunks takes 1/v of the stage's time: bubble (n-1)/(v*m).
  for (auto [n, m, v] : std::vector<std::tuple<int, int, int>>{{4, 8, 2}, {3, 6, 3}, {4, 4, 2}}) {
    INFO("n=" << n << " m=" << m << " v=" << v);
    const double f = 1.0 / v;
    const auto tl =
        timeline(make_schedule(Schedule::interleaved_1f1b, n, m, v), n, v, equal(n * v, {f, 2 * f, 0}));
    CHECK(tl.bubble == Approx(static_cast<double>(n - 1) / (v * m)));
  }
  CHECK_THROWS_AS(make_schedule(Schedule::interleaved_1f1b, 4, 6, 2),
                  UsageError);                                                 // 6 is not a multiple of 4
  CHECK_THROWS_AS(make_schedule(Schedule::one_f_one_b, 4, 8, 2), UsageError);  // v > 1 needs interleaving
}

TEST_CASE("warm-up counts and activations in flight follow each schedule's formula", "[pipeline][schedule]") {
  // n = 5, m = 12. Stage i warms up with min(m, n-i-1) forwards in 1F1B and
  // holds min(m, n-i) activations; eager-1F1B warms up min(m, 2(n-i)-1) and
  // holds as many; GPipe holds all m; interleaved (v = 2, m = 10) warms up
  // 2(n-i-1) + (v-1)n chunk-forwards.
  const int n = 5;
  const int m = 12;
  const auto one = make_schedule(Schedule::one_f_one_b, n, m);
  const auto eager = make_schedule(Schedule::eager_1f1b, n, m);
  const auto gpipe = make_schedule(Schedule::gpipe, n, m);
  const auto times = equal(n, {1, 2, 0});
  const auto t1 = timeline(one, n, 1, times);
  const auto te = timeline(eager, n, 1, times);
  const auto tg = timeline(gpipe, n, 1, times);
  for (int i = 0; i < n; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    INFO("stage " << i);
    // In 1F1B the first backward follows one more forward than the warm-up.
    CHECK(leading_forwards(one[iu]) == std::min(m, n - i - 1) + 1);
    CHECK(leading_forwards(eager[iu]) == std::min(m, 2 * (n - i) - 1));
    CHECK(t1.peak_in_flight[iu] == std::min(m, n - i));
    CHECK(te.peak_in_flight[iu] == std::min(m, 2 * (n - i) - 1));
    CHECK(tg.peak_in_flight[iu] == m);
  }
  const auto inter = make_schedule(Schedule::interleaved_1f1b, n, 10, 2);
  for (int i = 0; i < n; ++i)
    CHECK(warmup_forwards(Schedule::interleaved_1f1b, n, 10, 2, i) == 2 * (n - i - 1) + n);
  CHECK(leading_forwards(inter[0]) == 2 * (n - 1) + n + 1);
}

TEST_CASE("every pass appears once per device, and no backward precedes its forward",
          "[pipeline][schedule]") {
  // For every schedule: each device runs (F, B[, W]) of every (microbatch,
  // chunk) exactly once, F before B before W; the timeline completes
  // (no deadlock) and respects the cross-stage dependencies.
  const int n = 4;
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::eager_1f1b, Schedule::interleaved_1f1b,
                     Schedule::zb_h1}) {
    const int v = s == Schedule::interleaved_1f1b ? 2 : 1;
    const int m = 8;
    INFO(to_string(s));
    const auto ops = make_schedule(s, n, m, v);
    const bool split = s == Schedule::zb_h1;
    for (const auto& dev : ops) {
      std::set<std::tuple<int, int, int>> seen;
      for (std::size_t k = 0; k < dev.size(); ++k) {
        const auto& op = dev[k];
        CHECK(seen.insert({static_cast<int>(op.pass), op.microbatch, op.chunk}).second);
        if (op.pass != Pass::forward) {
          const Pass before = op.pass == Pass::backward ? Pass::forward : Pass::backward;
          CHECK(seen.contains({static_cast<int>(before), op.microbatch, op.chunk}));
        }
      }
      CHECK(seen.size() == static_cast<std::size_t>((split ? 3 : 2) * m * v));
    }
    const auto tl = timeline(ops, n, v, equal(n * v, {1, 1, split ? 1.0 : 0.0}));
    // Stage s+1's forward of a microbatch starts after stage s's ends.
    for (int d = 0; d + 1 < n; ++d)
      for (std::size_t k = 0; k < ops[static_cast<std::size_t>(d)].size(); ++k) {
        const auto& op = ops[static_cast<std::size_t>(d)][k];
        if (op.pass != Pass::forward || op.chunk != 0) continue;
        const auto& next = ops[static_cast<std::size_t>(d + 1)];
        const auto it = std::find(next.begin(), next.end(), PipelineOp{Pass::forward, op.microbatch, 0});
        REQUIRE(it != next.end());
        CHECK(tl.ops[static_cast<std::size_t>(d + 1)][static_cast<std::size_t>(it - next.begin())].start >=
              tl.ops[static_cast<std::size_t>(d)][k].end);
      }
  }
}

TEST_CASE("ZB-H1 cuts 1F1B's bubble to a third at 1F1B's peak memory", "[pipeline][schedule]") {
  // F = B = W = 1 (1F1B: F = 1, backward = B + W = 2). 1F1B's bubble time is
  // (n-1)(F+B+W) = 3(n-1); ZB-H1's is (n-1)(F+B-W) = n-1. Makespans for
  // n = 4, m = 8: 3*8 + 9 = 33 and 3*8 + 3 = 27. No stage holds more than n
  // microbatches (1F1B's peak, on its stage 0).
  const int n = 4;
  const int m = 8;
  const auto one = timeline(make_schedule(Schedule::one_f_one_b, n, m), n, 1, equal(n, {1, 2, 0}));
  const auto zb = timeline(make_schedule(Schedule::zb_h1, n, m), n, 1, equal(n, {1, 1, 1}));
  CHECK(one.makespan == Approx(33));
  CHECK(zb.makespan == Approx(27));
  CHECK(*std::max_element(zb.peak_in_flight.begin(), zb.peak_in_flight.end()) ==
        *std::max_element(one.peak_in_flight.begin(), one.peak_in_flight.end()));
}

TEST_CASE("transfers between stages delay 1F1B's forwards, eager-1F1B hides them", "[pipeline][schedule]") {
  // With a transfer of 1 between stages (F = 1, B = 2), 1F1B's steady state
  // waits for every activation (zero slack), eager-1F1B's extra warm-up
  // forwards give them slack: its makespan is shorter.
  const int n = 4;
  const int m = 16;
  const auto times = equal(n, {1, 2, 0});
  const auto one = timeline(make_schedule(Schedule::one_f_one_b, n, m), n, 1, times, 1.0);
  const auto eager = timeline(make_schedule(Schedule::eager_1f1b, n, m), n, 1, times, 1.0);
  CHECK(eager.makespan < one.makespan);
}

TEST_CASE("schedule names", "[pipeline][schedule]") {
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::eager_1f1b, Schedule::interleaved_1f1b,
                     Schedule::zb_h1})
    CHECK(schedule_from(to_string(s)) == s);
  CHECK_FALSE(schedule_from("2f2b"));
  CHECK_THROWS_AS(make_schedule(Schedule::gpipe, 0, 4), UsageError);
}

TEST_CASE("a blocking play sends once both ends are ready and holds the sender until then",
          "[pipeline][schedule]") {
  // 1F1B, 2 stages, 2 microbatches: device 0 runs F0 F1 B0 B1, device 1 F0
  // B0 F1 B1; stage 0 sends to stage 1. Worked by hand: F0 sends at once
  // (device 1 has nothing before its F0); F1's activations wait for device
  // 1's B0 (the pass before its F1), and device 0 runs nothing more until
  // they go; B0's gradient goes once device 0's F1 is done; B1's waits for
  // device 0's B0.
  const auto ops = make_schedule(Schedule::one_f_one_b, 2, 2);
  const std::vector<PlayStep> want{{0, 0, -1}, {0, 0, 1},  {0, 1, -1}, {1, 0, -1}, {1, 1, -1}, {1, 1, 0},
                                   {0, 1, 1},  {1, 2, -1}, {1, 3, -1}, {0, 2, -1}, {1, 3, 0},  {0, 3, -1}};
  CHECK(blocking_play(ops, 2, {{1}, {}}) == want);
  // Every schedule plays through without deadlock, each pass once, and each
  // transfer after the pass it carries.
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::eager_1f1b, Schedule::zb_h1}) {
    const auto o = make_schedule(s, 4, 8);
    const auto steps = blocking_play(o, 4, {{1}, {2}, {3}, {}});
    CHECK(std::count_if(steps.begin(), steps.end(), [](const PlayStep& p) { return p.to < 0; }) ==
          4 * ssize(o[0]));
    std::set<std::pair<int, std::size_t>> played;
    for (const PlayStep& p : steps) {
      if (p.to < 0) CHECK(played.insert({p.device, p.index}).second);
      if (p.to >= 0) CHECK(played.count({p.device, p.index}) == 1);
    }
  }
  // Interleaved 1F1B sends a chunk's activations to a device still busy
  // with passes that wait on the sender's later ones: held ends deadlock.
  const auto inter = make_schedule(Schedule::interleaved_1f1b, 2, 4, 2);
  CHECK_THROWS_AS(blocking_play(inter, 2, {{1}, {2}, {3}, {}}), UsageError);
}
