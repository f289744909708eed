#include "sim/engine.h"

#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::sim;

namespace {
struct Recorder final : EventHandler {
  std::string log;
  std::uint32_t live_version = 0;
  void on_event(Time now, std::uint32_t payload, std::uint32_t version) override {
    if (version != live_version) return;  // stale
    log += std::to_string(now.count_ps()) + ":" + std::to_string(payload) + " ";
  }
};
}  // namespace

TEST_CASE("events run in (time, insertion) order", "[engine]") {
  // Scheduled out of order; equal times keep insertion order: 5:1 5:2 before 7:0.
  Engine e;
  Recorder r;
  e.schedule(Time::ps(7), &r, 0);
  e.schedule(Time::ps(5), &r, 1);
  e.schedule(Time::ps(5), &r, 2);
  e.schedule(Time::ps(9), &r, 3);
  e.run();
  CHECK(r.log == "5:1 5:2 7:0 9:3 ");
  CHECK(e.now() == Time::ps(9));
  CHECK(e.events_processed() == 4);
}

TEST_CASE("stale events are dropped by their version", "[engine]") {
  // Version 0 events scheduled, then the handler moves to version 1: only
  // the version-1 event (at 8 ps) is acted on.
  Engine e;
  Recorder r;
  e.schedule(Time::ps(3), &r, 10, 0);
  e.schedule(Time::ps(8), &r, 11, 1);
  r.live_version = 1;
  e.run();
  CHECK(r.log == "8:11 ");
  CHECK(e.events_processed() == 2);  // the stale one was popped, not searched for
}

TEST_CASE("closures can schedule more events, run(until) stops on time", "[engine]") {
  Engine e;
  std::string log;
  e.schedule(Time::ns(1), [&] {
    log += "a";
    e.schedule(e.now() + Time::ns(1), [&] { log += "b"; });
    e.schedule(e.now(), [&] { log += "c"; });  // same time, after a
  });
  e.schedule(Time::ns(5), [&] { log += "d"; });
  e.run(Time::ns(2));
  CHECK(log == "acb");
  CHECK(e.events_pending() == 1);
  e.run();
  CHECK(log == "acbd");
}

TEST_CASE("scheduling in the past is a bug", "[engine]") {
  Engine e;
  e.schedule(Time::ns(5), [] {});
  e.run();
  CHECK_THROWS_AS(e.schedule(Time::ns(1), [] {}), InternalError);
}

TEST_CASE("two engines in two threads do not interfere", "[engine]") {
  // Each counts its own 100,000 events; no shared state.
  auto count = [] {
    Engine e;
    Recorder r;
    for (int i = 0; i < 100'000; ++i) e.schedule(Time::ps(i), &r, 0, 1);  // all stale for r
    e.run();
    return e.events_processed();
  };
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::thread t1([&] { a = count(); });
  std::thread t2([&] { b = count(); });
  t1.join();
  t2.join();
  CHECK(a == 100'000);
  CHECK(b == 100'000);
}
