#pragma once
// A plan's devices and a topology's nodes, both ways: planners name GPUs by
// node id and get each one's index in Plan::devices, added on first use, in
// constant time (plan::device_index searches the table); executors and the
// CLI take a plan's device names to the topology's GPUs (plan_nodes).

#include <cstddef>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "topology/topology.h"

namespace meshsim::sim {

class PlanDevices {
 public:
  /// Devices `plan` already lists keep their indices.
  PlanDevices(const topology::Topology& t, plan::Plan& plan);
  /// The plan index of GPU `n`, appending its name to the plan when new.
  std::size_t operator()(topology::NodeId n);

 private:
  static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
  const topology::Topology& topo_;
  plan::Plan& plan_;
  std::vector<std::size_t> index_;  // per topology node
};

/// The topology node of each of the plan's devices (indexed like
/// Plan::devices). ConfigError unless each is a GPU of `t`; the error names
/// the JSON path where the plan first uses it (e.g. `tasks[3].dst`).
[[nodiscard]] std::vector<topology::NodeId> plan_nodes(const plan::Plan& p, const topology::Topology& t,
                                                       const std::string& file);

}  // namespace meshsim::sim
