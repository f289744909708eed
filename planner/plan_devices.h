#pragma once
// A plan's device table seen from a topology: planners name GPUs by node
// id and get each one's index in Plan::devices, added on first use, in
// constant time (plan::device_index searches the table).

#include <cstddef>
#include <vector>

#include "plan/plan.h"
#include "topology/topology.h"

namespace meshsim::planner {

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

}  // namespace meshsim::planner
