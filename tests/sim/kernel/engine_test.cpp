#include "sim/kernel/engine.h"

#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::sim::kernel;

namespace {
struct Recorder final : EventHandler {
  std::string log;
  void on_event(Time now, std::uint32_t payload) override {
    log += std::to_string(now.count_ps()) + ":" + std::to_string(payload) + " ";
  }
};

// Event a (payload 1) at 1 ns schedules b (2) 1 ns later and c (3) at the
// same time; d (4) is at 5 ns.
struct Chain final : EventHandler {
  Engine* e = nullptr;
  std::string log;
  void on_event(Time now, std::uint32_t payload) override {
    log += static_cast<char>('a' + payload - 1);
    if (payload != 1) return;
    e->schedule(now + Time::ns(1), this, 2);
    e->schedule(now, this, 3);
  }
};

// Counts its events.
struct Counter final : EventHandler {
  std::uint64_t n = 0;
  void on_event(Time /*now*/, std::uint32_t /*payload*/) override { ++n; }
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

TEST_CASE("handlers can schedule more events, run(until) stops on time", "[engine]") {
  // a at 1 ns adds b at 2 ns and c at 1 ns (after a, same time); run(2 ns)
  // runs a, c, b and leaves d at 5 ns.
  Engine e;
  Chain h;
  h.e = &e;
  e.schedule(Time::ns(1), &h, 1);
  e.schedule(Time::ns(5), &h, 4);
  e.run(Time::ns(2));
  CHECK(h.log == "acb");
  CHECK(e.events_pending() == 1);
  e.run();
  CHECK(h.log == "acbd");
}

TEST_CASE("scheduling in the past is a bug", "[engine]") {
  Engine e;
  Recorder r;
  e.schedule(Time::ns(5), &r);
  e.run();
  CHECK_THROWS_AS(e.schedule(Time::ns(1), &r), InternalError);
}

TEST_CASE("two engines in two threads do not interfere", "[engine]") {
  // Each counts its own 100,000 events; no shared state.
  auto count = [] {
    Engine e;
    Counter c;
    for (int i = 0; i < 100'000; ++i) e.schedule(Time::ps(i), &c);
    e.run();
    return c.n == e.events_processed() ? c.n : 0;
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

TEST_CASE("a timer's event moves in place and runs once", "[engine]") {
  // Set at 10 ps, moved to 5, then to 20: one event, at 20 ps, and never
  // more than one pending on its account.
  Engine e;
  Recorder r;
  const Engine::TimerId t = e.add_timer(&r, 7);
  e.set_timer(t, Time::ps(10));
  e.set_timer(t, Time::ps(5));
  e.set_timer(t, Time::ps(20));
  CHECK(e.events_pending() == 1);
  CHECK(e.timer_set(t));
  CHECK(e.timer_at(t) == Time::ps(20));
  e.run();
  CHECK(r.log == "20:7 ");
  CHECK_FALSE(e.timer_set(t));
  CHECK(e.events_processed() == 1);
}

TEST_CASE("timer and plain events share one (time, insertion) order, and a cancelled timer does not run",
          "[engine]") {
  // At 5 ps: plain 1, then timer 2 (set second), then plain 3. Timer 4 is
  // set for 6 ps and cancelled.
  Engine e;
  Recorder r;
  const Engine::TimerId a = e.add_timer(&r, 2);
  const Engine::TimerId b = e.add_timer(&r, 4);
  e.schedule(Time::ps(5), &r, 1);
  e.set_timer(a, Time::ps(5));
  e.schedule(Time::ps(5), &r, 3);
  e.set_timer(b, Time::ps(6));
  e.cancel_timer(b);
  e.run();
  CHECK(r.log == "5:1 5:2 5:3 ");
}

namespace {
// Logs each call; the first event at 5 ps asks for the end of the instant
// and schedules one more event at 5 ps.
struct InstantLog final : EventHandler {
  Engine* e = nullptr;
  std::string log;
  void on_event(Time now, std::uint32_t payload) override {
    log += std::to_string(now.count_ps()) + ":" + std::to_string(payload) + " ";
    if (payload == 1) {
      e->at_instant_end(this, 9);
      e->schedule(now, this, 3);
    }
  }
};
}  // namespace

TEST_CASE("the end of an instant comes after every event at that time, even late ones", "[engine]") {
  // Events 1 and 2 at 5 ps, 4 at 6 ps. Event 1 asks for an end-of-instant
  // call (9) and schedules 3 at 5 ps: 9 runs after 1, 2 and 3, before 4.
  Engine e;
  InstantLog h;
  h.e = &e;
  e.schedule(Time::ps(5), &h, 1);
  e.schedule(Time::ps(5), &h, 2);
  e.schedule(Time::ps(6), &h, 4);
  e.run();
  CHECK(h.log == "5:1 5:2 5:3 5:9 6:4 ");
}

TEST_CASE("run_instant runs one instant whole, end-of-instant calls included", "[engine]") {
  // a at 1 ns schedules c at 1 ns and b at 2 ns; the end call comes after c.
  Engine e;
  Chain c;
  c.e = &e;
  struct EndCall final : EventHandler {
    std::string* log = nullptr;
    void on_event(Time /*now*/, std::uint32_t /*payload*/) override { *log += '|'; }
  } end;
  end.log = &c.log;
  e.schedule(Time::ns(1), &c, 1);
  e.at_instant_end(&end);  // before any event: its instant is the clock's start, 0
  e.schedule(Time::ns(5), &c, 4);
  CHECK(e.run_instant());
  CHECK(c.log == "|");
  CHECK(e.run_instant());
  CHECK(c.log == "|ac");
  CHECK(e.now() == Time::ns(1));
  CHECK(e.run_instant());
  CHECK(c.log == "|acb");
  CHECK(e.run_instant());
  CHECK(c.log == "|acbd");
  CHECK_FALSE(e.run_instant());
}

TEST_CASE("pending lists events in run order, and jump moves them and the clock in that order", "[engine]") {
  Engine e;
  Recorder r;
  e.schedule(Time::ps(9), &r, 3);
  e.schedule(Time::ps(5), &r, 1);
  e.schedule(Time::ps(5), &r, 2);
  std::vector<Engine::Pending> p;
  e.pending(p);
  REQUIRE(p.size() == 3);
  CHECK((p[0].at == Time::ps(5) && p[0].payload == 1));
  CHECK((p[1].at == Time::ps(5) && p[1].payload == 2));
  CHECK((p[2].at == Time::ps(9) && p[2].payload == 3));
  // 100 ps later, payloads + 10, 7 events counted as run.
  e.jump(Time::ps(100), 7, [](EventHandler*, std::uint32_t x) { return x + 10; });
  CHECK(e.now() == Time::ps(100));
  CHECK(e.events_processed() == 7);
  e.run();
  CHECK(r.log == "105:11 105:12 109:13 ");
  CHECK(e.events_processed() == 10);
}
