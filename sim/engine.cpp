#include "sim/engine.h"

#include "core/error.h"

namespace meshsim::sim {

void Engine::schedule(Time at, EventHandler* handler, std::uint64_t payload, std::uint64_t version) {
  MESHSIM_ASSERT(at >= now_, "events cannot be scheduled in the past");
  MESHSIM_ASSERT(handler != nullptr, "an event needs a handler");
  queue_.push(Event{at, seq_++, handler, payload, version});
}

void Engine::schedule(Time at, std::function<void()> fn) {
  MESHSIM_ASSERT(at >= now_, "events cannot be scheduled in the past");
  std::uint64_t slot = 0;
  if (!free_closures_.empty()) {
    slot = free_closures_.back();
    free_closures_.pop_back();
    closures_[slot] = std::move(fn);
  } else {
    slot = closures_.size();
    closures_.push_back(std::move(fn));
  }
  queue_.push(Event{at, seq_++, nullptr, slot, 0});
}

bool Engine::step() {
  if (queue_.empty()) return false;
  const Event e = queue_.top();
  queue_.pop();
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
  while (!queue_.empty() && queue_.top().at <= until) step();
}

}  // namespace meshsim::sim
