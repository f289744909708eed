#include "traces/kineto.h"

#include <sstream>

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::traces;
using plan::Phase;

namespace {

const std::string kSample = MESHSIM_SOURCE_DIR "/tests/data/traces/kineto-one-step.json";

// The summed duration of the events of `phase`.
Time busy(const MeasuredStep& m, Phase phase) {
  Time t;
  for (const auto& e : m.events)
    if (e.phase == phase) t += e.duration;
  return t;
}

}  // namespace

TEST_CASE("a Kineto trace's last step becomes phases by launch time and NCCL kernel", "[kineto]") {
  // The sample's ProfilerStep#3 (hand-written, tests/data/traces): forward
  // GEMM 3000 us + flash forward 1000 us; backward (launched after the first
  // autograd op at +5000 us) GEMM 6000 + flash backward 2500; the
  // optimizer's fused Adam 800 + a memset 10; two all-reduces of 400; a
  // SendRecv kernel the args call all_to_all, 100. Its GPU work runs from
  // 5010100 to 5026910 us: 16810 us.
  const MeasuredStep m = load_kineto_step(kSample);
  CHECK(m.step == "ProfilerStep#3");
  CHECK(m.rank == 0);
  CHECK(m.world_size == 8);
  CHECK(m.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(m.span == Time::us(16810));
  CHECK(busy(m, Phase::forward) == Time::us(4000));
  CHECK(busy(m, Phase::backward) == Time::us(8500));
  CHECK(busy(m, Phase::optimizer) == Time::us(810));
  CHECK(busy(m, Phase::all_reduce) == Time::us(800));
  CHECK(busy(m, Phase::all_to_all) == Time::us(100));
  CHECK(busy(m, Phase::send_recv) == Time::zero());
  REQUIRE(m.events.size() == 9);
  CHECK(m.events.front().start == Time::zero());  // times from the step's first GPU work
  CHECK(m.events.front().stream == 7);
  // The earlier step, asked for: one GEMM of 500 us.
  const MeasuredStep two = load_kineto_step(kSample, 2);
  CHECK(two.span == Time::us(500));
  CHECK(busy(two, Phase::forward) == Time::us(500));
}

TEST_CASE("a trace without the step or the work compared is refused with the file", "[kineto]") {
  CHECK_THROWS_WITH(load_kineto_step(kSample, 9), Catch::Contains("no ProfilerStep#9"));
  CHECK_THROWS_WITH(kineto_step(Json::parse(R"({"traceEvents": []})"), "t.json"),
                    Catch::Contains("t.json") && Catch::Contains("no ProfilerStep#N"));
  CHECK_THROWS_WITH(kineto_step(Json::parse(R"({"schemaVersion": 1})"), "t.json"),
                    Catch::Contains("not a PyTorch profiler (Kineto) trace"));
  CHECK_THROWS_WITH(kineto_step(Json::parse(R"({"traceEvents": [{"ph": "X", "cat": "user_annotation",
                      "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10}]})"),
                                "t.json"),
                    Catch::Contains("no GPU work in ProfilerStep#1"));
}

TEST_CASE("predicted and measured phases sum per phase, the error against the measurement", "[kineto]") {
  const std::vector<plan::PhaseEvent> predicted{{Phase::forward, "F0", 0, Time::zero(), Time::us(300)},
                                                {Phase::forward, "F1", 0, Time::us(300), Time::us(300)},
                                                {Phase::all_gather, "ag", 1, Time::zero(), Time::us(50)}};
  const std::vector<plan::PhaseEvent> measured{{Phase::forward, "k", 7, Time::zero(), Time::us(500)},
                                               {Phase::optimizer, "adam", 7, Time::us(500), Time::us(20)}};
  const auto rows = plan::compare_phases(predicted, measured);
  REQUIRE(rows.size() == 3);  // forward, optimizer, all-gather, in the phases' order
  CHECK(rows[0].phase == Phase::forward);
  CHECK(rows[0].predicted == Time::us(600));
  CHECK(rows[0].measured == Time::us(500));
  CHECK(std::abs(*rows[0].error - 0.2) < 1e-12);
  CHECK(rows[1].phase == Phase::optimizer);
  CHECK(*rows[1].error == -1.0);
  CHECK(rows[2].phase == Phase::all_gather);
  CHECK_FALSE(rows[2].error.has_value());  // nothing measured
  // The side-by-side trace: measured is process 1, predicted process 2.
  const Json t = side_by_side_trace(measured, "measured", predicted, "predicted");
  int x = 0;
  for (const Json& e : t["traceEvents"])
    if (e["ph"] == "X") {
      ++x;
      if (e["name"] == "adam") CHECK(e["pid"] == 1);
      if (e["name"] == "ag") CHECK(e["pid"] == 2);
    }
  CHECK(x == 5);
  std::ostringstream streamed;  // the file --compare-trace writes, an event at a time
  write_side_by_side_trace(streamed, measured, "measured", predicted, "predicted");
  CHECK(streamed.str() == dump_json(t));
}
