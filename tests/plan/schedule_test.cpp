#include "plan/schedule.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "plan/plan_json.h"

using namespace meshsim;
using namespace meshsim::plan;
using Catch::Matchers::Contains;

namespace {

std::vector<std::size_t> list_of(std::span<const std::size_t> s) {
  return {s.begin(), s.end()};
}

Task compute(Plan& p, const char* id, const char* device, int stream, std::vector<std::size_t> deps = {}) {
  Task t;
  t.id = id;
  t.devices = {device_index(p, device)};
  t.stream = stream;
  t.deps = std::move(deps);
  t.duration = Time::us(1);
  return t;
}

ConfigError schedule_error(const Plan& p) {
  try {
    (void)make_schedule(p, "p.json");
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("the schedule accepted a cycle");
  throw;
}

}  // namespace

TEST_CASE("predecessors are deps plus the task before on each stream", "[plan][schedule]") {
  // a, b on X stream 0; c on X stream 1; d on Y after a; e a send X -> Y on stream 0.
  Plan p;
  p.tasks = {compute(p, "a", "X", 0), compute(p, "b", "X", 0), compute(p, "c", "X", 1),
             compute(p, "d", "Y", 0, {0})};
  Task e;
  e.id = "e";
  e.kind = TaskKind::send;
  e.devices = {device_index(p, "X"), device_index(p, "Y")};
  e.size = Bytes(8);
  p.tasks.push_back(e);
  const Schedule s = make_schedule(p, "p.json");
  CHECK(s.preds[0].empty());
  CHECK(list_of(s.preds[1]) == std::vector<std::size_t>{0});
  CHECK(s.preds[2].empty());  // another stream of the same device does not wait
  CHECK(list_of(s.preds[3]) == std::vector<std::size_t>{0});     // the dep; d is first on Y
  CHECK(list_of(s.preds[4]) == std::vector<std::size_t>{1, 3});  // last on X stream 0 and on Y stream 0
  CHECK(list_of(s.succs[0]) == std::vector<std::size_t>{1, 3});
  // Kahn, smallest ready index first: {a, c} -> a; {b, c, d} -> b, c, d; then e.
  CHECK(s.order == std::vector<std::size_t>{0, 1, 2, 3, 4});
}

TEST_CASE("a built plan's device or dependency index out of range is an internal error of the schedule",
          "[plan][schedule]") {
  // Two devices, two tasks; then b names device 2, then b waits for task 2
  // (there are two), then for itself: each is a planner's bug, reported as
  // it is read, before anything indexes with it.
  Plan p;
  p.tasks = {compute(p, "a", "X", 0), compute(p, "b", "Y", 0, {0})};
  CHECK_NOTHROW(make_schedule(p, "p.json"));
  Plan bad = p;
  bad.tasks[1].devices = {2};
  CHECK_THROWS_WITH(make_schedule(bad, "p.json"), Contains("task \"b\": device index out of range"));
  CHECK_THROWS_AS(make_schedule(bad, "p.json"), InternalError);
  bad = p;
  bad.tasks[1].deps = {2};
  CHECK_THROWS_WITH(make_schedule(bad, "p.json"), Contains("task \"b\": bad dependency index"));
  bad.tasks[1].deps = {1};
  CHECK_THROWS_AS(make_schedule(bad, "p.json"), InternalError);
}

TEST_CASE("a task may wait for a later one of another stream: the order is Kahn's, not the plan's",
          "[plan][schedule]") {
  // a (X) waits for c (Y); b (Z) is free. Ready: {b, c} -> b, then c, then a.
  Plan p;
  p.tasks = {compute(p, "a", "X", 0, {2}), compute(p, "b", "Z", 0), compute(p, "c", "Y", 0)};
  const Schedule s = make_schedule(p, "p.json");
  CHECK(s.order == std::vector<std::size_t>{1, 2, 0});
  CHECK(list_of(s.succs[2]) == std::vector<std::size_t>{0});
  CHECK(s.succs[0].empty());
}

TEST_CASE("a dependency on a later task of the same stream is a cycle, named with its stream",
          "[plan][schedule][bad-input]") {
  Plan p;
  p.tasks = {compute(p, "a", "h0/gpu0", 2, {1}), compute(p, "b", "h0/gpu0", 2)};
  const ConfigError e = schedule_error(p);
  CHECK(e.file() == "p.json");
  CHECK(e.json_path() == "tasks[0].stream");
  CHECK_THAT(e.message(), Contains("dependency cycle: a -> b -> a"));
  CHECK_THAT(e.message(), Contains("\"a\" comes before \"b\" on stream 2 of h0/gpu0"));
}

TEST_CASE("the loader rejects stream-order cycles and dependency cycles", "[plan][schedule][bad-input]") {
  auto load = [](const char* tasks) {
    return plan_from_json(
        parse_json_text(std::string(R"({"format": "meshsim.plan/1", "tasks": )") + tasks + "}", "p.json"),
        "p.json");
  };
  try {
    (void)load(R"([{"id": "x", "kind": "compute", "device": "g0", "duration": "1us", "deps": ["y"]},
                   {"id": "y", "kind": "compute", "device": "g0", "duration": "1us"}])");
    FAIL("accepted a stream-order cycle");
  } catch (const ConfigError& e) {
    CHECK(e.json_path() == "tasks[0].stream");
    CHECK_THAT(e.message(), Contains("x -> y -> x"));
  }
  try {
    (void)load(R"([{"id": "x", "kind": "compute", "device": "g0", "duration": "1us", "deps": ["z"]},
                   {"id": "y", "kind": "compute", "device": "g1", "duration": "1us", "deps": ["x"]},
                   {"id": "z", "kind": "compute", "device": "g2", "duration": "1us", "deps": ["y"]}])");
    FAIL("accepted a dependency cycle");
  } catch (const ConfigError& e) {
    CHECK(e.json_path() == "tasks[0].deps");
    CHECK_THAT(e.message(), Contains("dependency cycle: x -> z -> y -> x (each waits for the next)"));
  }
}

TEST_CASE("the critical path runs back through the predecessor that ended last", "[plan][schedule]") {
  // p0 [0, 2] and p1 [0, 2] (two devices) both precede j [2, 5]; k on a
  // third device ends at 5 too. Ties go to the later task: the path is p1, j
  // ... but k is later than j in plan order and ends at 5, so the path is k alone.
  Plan p;
  p.tasks = {compute(p, "p0", "A", 0), compute(p, "p1", "B", 0), compute(p, "j", "C", 0, {0, 1}),
             compute(p, "k", "D", 0)};
  const Schedule s = make_schedule(p, "p.json");
  const Timeline tl = make_timeline(s, {{Time::us(0), Time::us(2)},
                                        {Time::us(0), Time::us(2)},
                                        {Time::us(2), Time::us(5)},
                                        {Time::us(1), Time::us(5)}});
  CHECK(tl.makespan == Time::us(5));
  CHECK(tl.critical_path == std::vector<std::size_t>{3});
  // With k ending earlier, j ends last and p1 (the later of the tied predecessors) released it.
  const Timeline t2 = make_timeline(s, {{Time::us(0), Time::us(2)},
                                        {Time::us(0), Time::us(2)},
                                        {Time::us(2), Time::us(5)},
                                        {Time::us(1), Time::us(4)}});
  CHECK(t2.critical_path == std::vector<std::size_t>{1, 2});
  // p0 ending later than p1 takes the path through p0.
  const Timeline t3 = make_timeline(s, {{Time::us(0), Time::us(3)},
                                        {Time::us(0), Time::us(2)},
                                        {Time::us(3), Time::us(6)},
                                        {Time::us(1), Time::us(4)}});
  CHECK(t3.critical_path == std::vector<std::size_t>{0, 2});
  CHECK(make_timeline(make_schedule(Plan{}, "p.json"), {}).critical_path.empty());
}
