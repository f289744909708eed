#include "planner/plan_devices.h"

#include "core/error.h"

namespace meshsim::planner {

PlanDevices::PlanDevices(const topology::Topology& t, plan::Plan& plan)
    : topo_(t), plan_(plan), index_(t.node_count(), kAbsent) {
  for (std::size_t d = 0; d < plan.devices.size(); ++d)
    if (const auto n = t.find(plan.devices[d])) index_[*n] = d;
}

std::size_t PlanDevices::operator()(topology::NodeId n) {
  MESHSIM_ASSERT(n < index_.size(), "a node of the planner's topology");
  std::size_t& at = index_[n];
  if (at == kAbsent) {
    at = plan_.devices.size();
    plan_.devices.push_back(topo_.node(n).name);
  }
  return at;
}

}  // namespace meshsim::planner
