#include "pipeline/phases.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "plan/collective.h"

namespace meshsim::pipeline {

namespace {

using plan::Phase;

std::optional<Phase> phase_of(const PipelineIteration& it, std::size_t i) {
  const plan::Task& t = it.plan.tasks[i];
  if (it.task_kind[i] == PipelineIteration::Kind::optimizer) return Phase::optimizer;
  switch (t.kind) {
    case plan::TaskKind::compute: return t.id.empty() || t.id[0] == 'F' ? Phase::forward : Phase::backward;
    case plan::TaskKind::send:
    case plan::TaskKind::broadcast: return Phase::send_recv;
    case plan::TaskKind::collective:
      switch (t.op) {
        case plan::CollectiveOp::all_reduce: return Phase::all_reduce;
        case plan::CollectiveOp::all_gather: return Phase::all_gather;
        case plan::CollectiveOp::reduce_scatter: return Phase::reduce_scatter;
        case plan::CollectiveOp::all_to_all: return Phase::all_to_all;
      }
  }
  return std::nullopt;
}

}  // namespace

std::vector<plan::PhaseEvent> gpu_phases(const PipelineIteration& it, const sim::SimResult& r,
                                         const std::string& gpu) {
  const auto found = std::find(it.plan.devices.begin(), it.plan.devices.end(), gpu);
  if (found == it.plan.devices.end())
    throw UsageError(fmt::format("GPU {} runs nothing in this iteration", gpu));
  const auto device = static_cast<std::size_t>(found - it.plan.devices.begin());
  std::vector<plan::PhaseEvent> out;
  for (std::size_t i = 0; i < it.plan.tasks.size(); ++i) {
    const plan::Task& t = it.plan.tasks[i];
    if (std::find(t.devices.begin(), t.devices.end(), device) == t.devices.end()) continue;
    const auto phase = phase_of(it, i);
    if (!phase) continue;
    out.push_back({*phase, t.id, t.stream, r.tasks[i].start, r.tasks[i].end - r.tasks[i].start});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  return out;
}

}  // namespace meshsim::pipeline
