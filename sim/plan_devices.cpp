#include "sim/plan_devices.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::sim {

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

using plan::Plan;
using plan::Task;
using plan::TaskKind;
using topology::NodeId;

namespace {

// The JSON path where `p` first names device d: a task's key, else a buffer's.
std::string first_use(const Plan& p, std::size_t d) {
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const Task& task = p.tasks[i];
    const auto at = std::find(task.devices.begin(), task.devices.end(), d);
    if (at == task.devices.end()) continue;
    const auto k = static_cast<std::size_t>(at - task.devices.begin());
    switch (task.kind) {
      case TaskKind::compute:
        return task.devices.size() == 1 ? fmt::format("tasks[{}].device", i)
                                        : fmt::format("tasks[{}].devices[{}]", i, k);
      case TaskKind::send: return fmt::format("tasks[{}].{}", i, k == 0 ? "src" : "dst");
      case TaskKind::broadcast:
        return k == 0 ? fmt::format("tasks[{}].root", i) : fmt::format("tasks[{}].receivers[{}]", i, k - 1);
      case TaskKind::collective: return fmt::format("tasks[{}].group[{}]", i, k);
    }
  }
  for (std::size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].device == d) return fmt::format("buffers[{}].device", b);
  return "devices";
}

}  // namespace

std::vector<NodeId> plan_nodes(const Plan& p, const topology::Topology& t, const std::string& file) {
  std::vector<NodeId> out;
  out.reserve(p.devices.size());
  for (std::size_t d = 0; d < p.devices.size(); ++d) {
    const std::string& name = p.devices[d];
    const auto id = t.find(name);
    if (!id)
      throw ConfigError(file, first_use(p, d),
                        fmt::format("no device named \"{}\" in topology \"{}\"", name, t.name));
    if (t.node(*id).kind != topology::NodeKind::gpu)
      throw ConfigError(file, first_use(p, d),
                        fmt::format("\"{}\" is a {}, not a GPU", name, to_string(t.node(*id).kind)));
    out.push_back(*id);
  }
  return out;
}

}  // namespace meshsim::sim
