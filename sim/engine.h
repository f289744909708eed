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
// due — the queue is never scanned. An event that moves often (a flow's
// completion, which moves whenever its rate changes) is better a timer: a
// timer has at most one pending event, kept in a second queue indexed by
// timer, and moving it replaces that event in place. Timer events and plain
// events share one (time, insertion sequence) order; moving a timer gives
// its event a new sequence number, as scheduling it afresh would.
// Closures (std::function) are offered for the rare events of tests and
// set-up.
//
// End of instant. A handler may ask to be called once after every event at
// the current time has run, including events those schedule at the same
// time, and before the clock moves on: the flow network solves its rates
// there, once per instant.

#include <cstdint>
#include <functional>
#include <vector>

#include "core/units.h"
#include "sim/quad_heap.h"

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

  using TimerId = std::uint32_t;
  /// A new timer, not set, for `handler` (called with `payload`, version 0).
  TimerId add_timer(EventHandler* handler, std::uint32_t payload);
  /// Sets the timer to fire at `at` (>= now()), replacing its pending event.
  void set_timer(TimerId t, Time at);
  /// Removes the timer's pending event, if any.
  void cancel_timer(TimerId t);
  [[nodiscard]] bool timer_set(TimerId t) const { return timers_[t].pos != kUnset; }

  /// Calls handler->on_event(now(), payload, 0) once, when every event at
  /// the current time has run (see the header).
  void at_instant_end(EventHandler* handler, std::uint32_t payload = 0);

  /// Runs the earliest event, or the end-of-instant calls when the next
  /// event is later; false when nothing is left.
  bool step();
  /// Runs events until none is left or the next one is after `until`.
  void run(Time until = Time::max());

  [[nodiscard]] std::uint64_t events_processed() const { return processed_; }
  [[nodiscard]] std::size_t events_pending() const { return queue_.size() + timer_heap_.size(); }

 private:
  struct Event {
    Time at;
    std::uint64_t seq;
    EventHandler* handler;  // nullptr: payload indexes closures_
    std::uint32_t payload;
    std::uint32_t version;  // 32 bytes an event: the queue is memory-bound
  };
  struct EventBefore {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at < b.at : a.seq < b.seq;
    }
  };

  void dispatch(const Event& e);
  void next_event();
  bool step_to(Time next);
  [[nodiscard]] Time next_time() const;
  void end_instant();

  // The timers' queue: the same 4-ary heap, each entry's position kept in
  // its timer so that set_timer and cancel_timer find it.
  static constexpr std::uint32_t kUnset = UINT32_MAX;
  struct TimerEntry {
    Time at;
    std::uint64_t seq;
    TimerId timer;
    bool operator<(const TimerEntry& o) const { return at != o.at ? at < o.at : seq < o.seq; }
  };
  struct Timer {
    EventHandler* handler;
    std::uint32_t payload;
    std::uint32_t pos;  // in timer_heap_, or kUnset
  };
  void timer_place(std::size_t i, const TimerEntry& e);
  void timer_up(std::size_t i, TimerEntry e);
  void timer_down(std::size_t i, TimerEntry e);
  void timer_remove(std::size_t i);

  Time now_;
  std::uint64_t seq_ = 0;
  std::uint64_t processed_ = 0;
  QuadHeap<Event, EventBefore> queue_;  // on (at, seq)
  std::vector<std::function<void()>> closures_;
  std::vector<std::uint32_t> free_closures_;
  std::vector<Timer> timers_;
  std::vector<TimerEntry> timer_heap_;
  struct Call {
    EventHandler* handler;
    std::uint32_t payload;
  };
  std::vector<Call> instant_end_;
  std::vector<Call> calling_;
};

}  // namespace meshsim::sim
