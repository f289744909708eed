#include "sim/kernel/engine.h"

#include <algorithm>

#include "core/error.h"

namespace meshsim::sim::kernel {

Time Engine::after(Time delay) const {
  if (delay > kClockLimit - now_) clock_overflow();
  return now_ + delay;
}

void Engine::clock_overflow() {
  throw ClockOverflow(
      "the run would last beyond 8,000,000 s (about 92 days) of simulated time, the simulator's range: "
      "a size, duration or FLOP count is too large");
}

void Engine::schedule(Time at, EventHandler* handler, std::uint32_t payload) {
  MESHSIM_ASSERT(at >= now_, "events cannot be scheduled in the past");
  MESHSIM_ASSERT(handler != nullptr, "an event needs a handler");
  queue_.push(Event{at, seq_++, handler, payload});
}

bool Engine::step() {
  return step_to(next_time());
}

// One step, given the next pending event's time.
bool Engine::step_to(Time next) {
  if (!instant_end_.empty() && next > now_) {
    end_instant();
    return true;
  }
  if (next == Time::max()) return false;
  next_event();
  return true;
}

// Runs the earliest of the plain and the timer events.
void Engine::next_event() {
  if (!timer_heap_.empty() &&
      (queue_.empty() || timer_heap_.front() < TimerEntry{queue_.top().at, queue_.top().seq, 0})) {
    const TimerEntry top = timer_heap_.front();
    timer_remove(0);
    const Timer& t = timers_[top.timer];
    dispatch(Event{top.at, top.seq, t.handler, t.payload});
  } else {
    dispatch(queue_.pop());
  }
}

void Engine::dispatch(const Event& e) {
  now_ = e.at;
  ++processed_;
  e.handler->on_event(now_, e.payload);
}

// The earliest pending event's time; Time::max() when none is pending.
Time Engine::next_time() const {
  Time t = Time::max();
  if (!queue_.empty()) t = queue_.top().at;
  if (!timer_heap_.empty() && timer_heap_.front().at < t) t = timer_heap_.front().at;
  return t;
}

void Engine::end_instant() {
  calling_.swap(instant_end_);
  for (const Call& c : calling_) c.handler->on_event(now_, c.payload);
  calling_.clear();
}

void Engine::run(Time until) {
  while (true) {
    if (timer_heap_.empty() && instant_end_.empty()) {  // plain events only: the short way
      if (queue_.empty() || queue_.top().at > until) return;
      dispatch(queue_.pop());
      continue;
    }
    const Time next = next_time();
    // The instant's end calls come before a stop at `until`.
    if (instant_end_.empty() && next > until) return;
    if (!step_to(next)) return;
  }
}

bool Engine::run_instant() {
  if (instant_end_.empty()) {
    if (next_time() == Time::max()) return false;
    next_event();  // the instant's first event sets the clock
  }
  while (true) {
    if (next_time() == now_) {
      next_event();
    } else if (!instant_end_.empty()) {
      end_instant();
    } else {
      return true;
    }
  }
}

void Engine::pending(std::vector<Pending>& out) const {
  std::vector<Event> events = queue_.items();
  std::sort(events.begin(), events.end(), EventBefore{});
  out.clear();
  for (const Event& e : events) out.push_back({e.at, e.handler, e.payload});
}

void Engine::jump_to(Time shift, std::uint64_t events, const std::vector<Pending>& moved) {
  MESHSIM_ASSERT(timer_heap_.empty() && instant_end_.empty(), "a jump starts between instants, no timer set");
  MESHSIM_ASSERT(moved.size() == queue_.size(), "a jump moves every pending event");
  if (shift > kClockLimit - now_) clock_overflow();
  for (const Pending& e : moved)
    if (shift > kClockLimit - e.at) clock_overflow();
  queue_.clear();
  now_ += shift;
  processed_ += events;
  for (const Pending& e : moved) queue_.push(Event{e.at + shift, seq_++, e.handler, e.payload});
}

void Engine::at_instant_end(EventHandler* handler, std::uint32_t payload) {
  MESHSIM_ASSERT(handler != nullptr, "an end-of-instant call needs a handler");
  instant_end_.push_back({handler, payload});
}

Engine::TimerId Engine::add_timer(EventHandler* handler, std::uint32_t payload) {
  MESHSIM_ASSERT(handler != nullptr, "a timer needs a handler");
  MESHSIM_ASSERT(timers_.size() < kUnset, "too many timers");
  timers_.push_back({handler, payload, kUnset});
  return static_cast<TimerId>(timers_.size() - 1);
}

void Engine::set_timer(TimerId t, Time at) {
  MESHSIM_ASSERT(at >= now_, "events cannot be scheduled in the past");
  const TimerEntry e{at, seq_++, t};
  const std::uint32_t pos = timers_[t].pos;
  if (pos == kUnset)
    TimerHeap::push(timer_heap_, e, TimerBefore{}, placed());
  else
    TimerHeap::update(timer_heap_, pos, e, TimerBefore{}, placed());
}

void Engine::cancel_timer(TimerId t) {
  if (timers_[t].pos != kUnset) timer_remove(timers_[t].pos);
}

void Engine::timer_remove(std::size_t i) {
  timers_[timer_heap_[i].timer].pos = kUnset;
  TimerHeap::erase(timer_heap_, i, TimerBefore{}, placed());
}

}  // namespace meshsim::sim::kernel
