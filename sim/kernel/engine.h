#pragma once
// The discrete-event engine.
//
// Events are ordered by (time, insertion sequence): the same inputs give
// the same order, byte for byte. There is no global state: each Engine is
// one simulation, and several can run in one process or in parallel
// threads.
//
// An event is a plain record (time, handler, payload): the queue holds no
// closures, and a handler tells its events apart by their payload. An
// event that moves (a flow group's next completion, which moves whenever
// its rate changes) is a timer: a timer has at most one pending event,
// kept in a second queue indexed by timer, and moving it replaces that
// event in place, so no stale event is ever queued or scanned. Timer
// events and plain events share one (time, insertion sequence) order;
// moving a timer gives its event a new sequence number, as scheduling it
// afresh would. Both queues are the kernel's one heap (sim/kernel/heap.h).
//
// End of instant. A handler may ask to be called once after every event at
// the current time has run, including events those schedule at the same
// time, and before the clock moves on: the flow network solves its rates
// there, once per instant.

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "sim/kernel/heap.h"

namespace meshsim::sim::kernel {

/// A time past Engine::kClockLimit: a UsageError the run names its task in.
class ClockOverflow : public UsageError {
 public:
  using UsageError::UsageError;
};

class EventHandler {
 public:
  /// Called when an event scheduled for this handler comes due; `now` is
  /// the event time.
  virtual void on_event(Time now, std::uint32_t payload) = 0;

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
  /// Throws the ClockOverflow that says the clock's range is exceeded.
  [[noreturn]] static void clock_overflow();

  /// Schedules an event at `at` (>= now(); InternalError otherwise).
  void schedule(Time at, EventHandler* handler, std::uint32_t payload = 0);

  using TimerId = std::uint32_t;
  /// A new timer, not set, for `handler` (called with `payload`).
  TimerId add_timer(EventHandler* handler, std::uint32_t payload);
  /// Sets the timer to fire at `at` (>= now()), replacing its pending event.
  void set_timer(TimerId t, Time at);
  /// Removes the timer's pending event, if any.
  void cancel_timer(TimerId t);
  [[nodiscard]] bool timer_set(TimerId t) const { return timers_[t].pos != kUnset; }
  /// When a set timer fires.
  [[nodiscard]] Time timer_at(TimerId t) const { return timer_heap_[timers_[t].pos].at; }

  /// Calls handler->on_event(now(), payload) once, when every event at
  /// the current time has run (see the header).
  void at_instant_end(EventHandler* handler, std::uint32_t payload = 0);

  /// Runs the earliest event, or the end-of-instant calls when the next
  /// event is later; false when nothing is left.
  bool step();
  /// Runs events until none is left or the next one is after `until`.
  void run(Time until = Time::max());
  /// Runs the next instant whole: every event at its time (those its events
  /// schedule at that time included) and its end-of-instant calls. False
  /// when nothing was left to run.
  bool run_instant();

  /// A pending plain event.
  struct Pending {
    Time at;
    EventHandler* handler;
    std::uint32_t payload;
  };
  /// The pending plain events in the order they will run (timers are not
  /// listed).
  void pending(std::vector<Pending>& out) const;
  /// Moves the clock and every pending plain event `shift` later, keeping
  /// their order, each payload replaced by remap(handler, payload), and
  /// counts `events` more as processed: a run that skips a stretch of time
  /// whose events it has accounted for itself. Between instants only, with
  /// no timer set (InternalError otherwise).
  template <typename Remap>
  void jump(Time shift, std::uint64_t events, Remap remap) {
    std::vector<Pending> moved;
    pending(moved);
    for (Pending& e : moved) e.payload = remap(e.handler, e.payload);
    jump_to(shift, events, moved);
  }

  [[nodiscard]] std::uint64_t events_processed() const { return processed_; }
  [[nodiscard]] std::size_t events_pending() const { return queue_.size() + timer_heap_.size(); }

 private:
  struct Event {
    Time at;
    std::uint64_t seq;
    EventHandler* handler;
    std::uint32_t payload;  // 32 bytes an event (padded): the queue is memory-bound
  };
  struct EventBefore {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at < b.at : a.seq < b.seq;
    }
  };

  void jump_to(Time shift, std::uint64_t events, const std::vector<Pending>& moved);
  void dispatch(const Event& e);
  void next_event();
  bool step_to(Time next);
  [[nodiscard]] Time next_time() const;
  void end_instant();

  // The timers' queue: the same 4-ary heap, each entry's position kept in
  // its timer (placed) so that set_timer and cancel_timer find it.
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
  using TimerHeap = DaryHeap<4>;
  struct TimerBefore {
    bool operator()(const TimerEntry& a, const TimerEntry& b) const { return a < b; }
  };
  struct TimerPlaced {
    std::vector<Timer>* timers;
    void operator()(const TimerEntry& e, std::size_t i) const {
      (*timers)[e.timer].pos = static_cast<std::uint32_t>(i);
    }
  };
  [[nodiscard]] TimerPlaced placed() { return {&timers_}; }
  void timer_remove(std::size_t i);

  Time now_;
  std::uint64_t seq_ = 0;
  std::uint64_t processed_ = 0;
  Heap<Event, EventBefore> queue_;  // on (at, seq)
  std::vector<Timer> timers_;
  std::vector<TimerEntry> timer_heap_;
  struct Call {
    EventHandler* handler;
    std::uint32_t payload;
  };
  std::vector<Call> instant_end_;
  std::vector<Call> calling_;
};

}  // namespace meshsim::sim::kernel
