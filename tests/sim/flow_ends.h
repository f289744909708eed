#pragma once
// A FlowClient for tests: records when each flow, named by its tag, ends,
// and optionally calls `then` from inside the notification.

#include <cstdint>
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

}  // namespace meshsim::sim
