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
  push(Event{at, seq_++, handler, payload, version});
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
  push(Event{at, seq_++, nullptr, slot, 0});
}

bool Engine::step() {
  if (queue_.empty()) return false;
  const Event e = pop();
  now_ = e.at;
  ++processed_;
  if (e.handler != nullptr) {
    e.handler->on_event(now_, e.payload, e.version);
  } else {
    std::function<void()> fn = std::move(closures_[e.payload]);
    free_closures_.push_back(e.payload);
    fn();
  }
  return true;
}

void Engine::run(Time until) {
  while (!queue_.empty() && queue_.front().at <= until) step();
}

void Engine::push(const Event& e) {
  std::size_t i = queue_.size();
  queue_.push_back(e);
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (!(queue_[parent] > e)) break;
    queue_[i] = queue_[parent];
    i = parent;
  }
  queue_[i] = e;
}

Engine::Event Engine::pop() {
  const Event top = queue_.front();
  const Event last = queue_.back();
  queue_.pop_back();
  const std::size_t n = queue_.size();
  if (n == 0) return top;
  std::size_t i = 0;
  while (true) {
    const std::size_t first = 4 * i + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t end = std::min(first + 4, n);
    for (std::size_t c = first + 1; c < end; ++c)
      if (queue_[best] > queue_[c]) best = c;
    if (!(last > queue_[best])) break;
    queue_[i] = queue_[best];
    i = best;
  }
  queue_[i] = last;
  return top;
}

}  // namespace meshsim::sim
