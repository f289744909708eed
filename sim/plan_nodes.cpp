// Plan device names to topology nodes (sim/executor.h).
#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/executor.h"

namespace meshsim::sim {

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
