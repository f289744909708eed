#pragma once
// A FlowClient for tests: records when each flow, named by its tag, ends,
// and optionally calls `then` from inside the notification. Actions: a
// test's set-up steps run at given simulated times (the engine itself
// schedules no closures).

#include <cstdint>
#include <deque>
#include <functional>
#include <map>

#include "sim/flow_network.h"

namespace meshsim::sim {

struct FlowEnds final : FlowClient {
  std::map<std::uint64_t, Time> at;
  std::function<void(std::uint64_t, Time)> then;

  void flow_done(FlowId /*f*/, std::uint64_t tag, Time now) override {
    at[tag] = now;
    if (then) then(tag, now);
  }
  /// Notify this recorder under `tag`.
  Notify operator()(std::uint64_t tag) { return {this, tag}; }
  [[nodiscard]] bool done(std::uint64_t tag) const { return at.count(tag) == 1; }
};

/// Runs each action given to at() when the engine reaches its time.
struct Actions final : kernel::EventHandler {
  explicit Actions(kernel::Engine& e) : engine(e) {}
  void at(Time t, std::function<void()> fn) {
    fns.push_back(std::move(fn));  // a deque: running one may add more
    engine.schedule(t, this, static_cast<std::uint32_t>(fns.size() - 1));
  }
  void on_event(Time /*now*/, std::uint32_t i) override { fns[i](); }

  kernel::Engine& engine;
  std::deque<std::function<void()>> fns;
};

}  // namespace meshsim::sim
