#include "sim/engine.h"

#include <algorithm>

#include "core/error.h"

namespace meshsim::sim {

Time Engine::after(Time delay) const {
  if (delay > kClockLimit - now_) clock_overflow();
  return now_ + delay;
}

void Engine::clock_overflow() {
  throw UsageError(
      "the run would last beyond 8,000,000 s (about 92 days) of simulated time, the simulator's range: "
      "a size, duration or FLOP count is too large");
}

void Engine::schedule(Time at, EventHandler* handler, std::uint32_t payload, std::uint32_t version) {
  MESHSIM_ASSERT(at >= now_, "events cannot be scheduled in the past");
  MESHSIM_ASSERT(handler != nullptr, "an event needs a handler");
  queue_.push(Event{at, seq_++, handler, payload, version});
}

void Engine::schedule(Time at, std::function<void()> fn) {
  MESHSIM_ASSERT(at >= now_, "events cannot be scheduled in the past");
  std::uint32_t slot = 0;
  if (!free_closures_.empty()) {
    slot = free_closures_.back();
    free_closures_.pop_back();
    closures_[slot] = std::move(fn);
  } else {
    MESHSIM_ASSERT(closures_.size() < UINT32_MAX, "too many pending closure events");
    slot = static_cast<std::uint32_t>(closures_.size());
    closures_.push_back(std::move(fn));
  }
  queue_.push(Event{at, seq_++, nullptr, slot, 0});
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
    dispatch(Event{top.at, top.seq, t.handler, t.payload, 0});
  } else {
    dispatch(queue_.pop());
  }
}

void Engine::dispatch(const Event& e) {
  now_ = e.at;
  ++processed_;
  if (e.handler != nullptr) {
    e.handler->on_event(now_, e.payload, e.version);
  } else {
    std::function<void()> fn = std::move(closures_[e.payload]);
    free_closures_.push_back(e.payload);
    fn();
  }
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
  for (const Call& c : calling_) c.handler->on_event(now_, c.payload, 0);
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
  if (pos == kUnset) {
    timer_heap_.push_back(e);
    timer_up(timer_heap_.size() - 1, e);
  } else if (e < timer_heap_[pos]) {
    timer_up(pos, e);
  } else {
    timer_down(pos, e);
  }
}

void Engine::cancel_timer(TimerId t) {
  if (timers_[t].pos != kUnset) timer_remove(timers_[t].pos);
}

void Engine::timer_place(std::size_t i, const TimerEntry& e) {
  timer_heap_[i] = e;
  timers_[e.timer].pos = static_cast<std::uint32_t>(i);
}

void Engine::timer_up(std::size_t i, TimerEntry e) {
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (!(e < timer_heap_[parent])) break;
    timer_place(i, timer_heap_[parent]);
    i = parent;
  }
  timer_place(i, e);
}

void Engine::timer_down(std::size_t i, TimerEntry e) {
  const std::size_t n = timer_heap_.size();
  while (true) {
    const std::size_t first = 4 * i + 1;
    if (first >= n) break;
    std::size_t best = first;
    for (std::size_t c = first + 1; c < std::min(first + 4, n); ++c)
      if (timer_heap_[c] < timer_heap_[best]) best = c;
    if (!(timer_heap_[best] < e)) break;
    timer_place(i, timer_heap_[best]);
    i = best;
  }
  timer_place(i, e);
}

// Removes entry i: the last entry takes its place and moves up or down.
void Engine::timer_remove(std::size_t i) {
  timers_[timer_heap_[i].timer].pos = kUnset;
  const TimerEntry last = timer_heap_.back();
  timer_heap_.pop_back();
  if (i == timer_heap_.size()) return;
  if (i > 0 && last < timer_heap_[(i - 1) / 4])
    timer_up(i, last);
  else
    timer_down(i, last);
}

}  // namespace meshsim::sim
