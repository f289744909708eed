#pragma once
// The discrete-event engine.
//
// Events are ordered by (time, insertion sequence): the same inputs give
// the same order, byte for byte. There is no global state: each Engine is
// one simulation, and several can run in one process or in parallel
// threads.
//
// An event is a plain record (time, handler, payload, version) so that the
// queue holds no heap-allocated closures on the hot path; a handler that
// invalidates its pending events (a flow whose rate changed) bumps its own
// version and drops events whose version no longer matches when they come
// due — the queue is never scanned. Closures (std::function) are offered for
// the rare events of tests and set-up.

#include <cstdint>
#include <functional>
#include <vector>

#include "core/units.h"

namespace meshsim::sim {

class EventHandler {
 public:
  /// Called when an event scheduled for this handler comes due; `now` is
  /// the event time.
  virtual void on_event(Time now, std::uint32_t payload, std::uint32_t version) = 0;

 protected:
  EventHandler() = default;
  EventHandler(const EventHandler&) = default;
  EventHandler& operator=(const EventHandler&) = default;
  ~EventHandler() = default;
};

class Engine {
 public:
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  [[nodiscard]] Time now() const { return now_; }

  /// The simulated clock stops at kClockLimit (about 92 days): a later
  /// event means inputs beyond what the simulator can time.
  static constexpr Time kClockLimit = Time::s(8'000'000);
  /// now() + delay; UsageError (clock_overflow) past kClockLimit.
  [[nodiscard]] Time after(Time delay) const;
  /// Throws the UsageError that says the clock's range is exceeded.
  [[noreturn]] static void clock_overflow();

  /// Schedules an event at `at` (>= now(); InternalError otherwise).
  void schedule(Time at, EventHandler* handler, std::uint32_t payload = 0, std::uint32_t version = 0);
  void schedule(Time at, std::function<void()> fn);

  /// Runs the earliest event; false when none is left.
  bool step();
  /// Runs events until none is left or the next one is after `until`.
  void run(Time until = Time::max());

  [[nodiscard]] std::uint64_t events_processed() const { return processed_; }
  [[nodiscard]] std::size_t events_pending() const { return queue_.size(); }

 private:
  struct Event {
    Time at;
    std::uint64_t seq;
    EventHandler* handler;  // nullptr: payload indexes closures_
    std::uint32_t payload;
    std::uint32_t version;  // 32 bytes an event: the queue is memory-bound
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  // A 4-ary min-heap on (at, seq): half the depth of a binary heap, and
  // the four children of a node share a cache line or two.
  void push(const Event& e);
  Event pop();

  Time now_;
  std::uint64_t seq_ = 0;
  std::uint64_t processed_ = 0;
  std::vector<Event> queue_;
  std::vector<std::function<void()>> closures_;
  std::vector<std::uint32_t> free_closures_;
};

}  // namespace meshsim::sim
