#include "tools/cli/pipeline_plot.h"

#include <fmt/format.h>

#include "core/csv.h"
#include "tools/cli/output.h"

namespace meshsim::cli {

namespace {

using Kind = pipeline::PipelineIteration::Kind;

// What a bar shows: the pass letter (F, B, W) of a compute task's id
// ("B3/s1/r0": microbatch 3's backward), else the task's kind.
std::string bar_kind(const std::string& id, Kind k) {
  switch (k) {
    case Kind::compute: return id.empty() ? "compute" : std::string(1, id.front());
    case Kind::tp_allreduce: return "tp all-reduce";
    case Kind::expert_alltoall: return "expert all-to-all";
    case Kind::context_exchange: return "context key/value exchange";
    case Kind::dp_allreduce: return "dp all-reduce";
    case Kind::optimizer: return "optimizer";
    case Kind::stage_transfer: return "transfer";
  }
  return "?";
}

// The microbatch of a pass id ("F12/s0/r0" -> "12"), empty for others.
std::string microbatch(const std::string& id) {
  const auto slash = id.find('/');
  if (id.empty() || (id[0] != 'F' && id[0] != 'B' && id[0] != 'W') || slash == std::string::npos) return "";
  return id.substr(1, slash - 1);
}

}  // namespace

void GanttRows::add(const std::string& panel, const pipeline::PipelineIteration& it,
                    const topology::Topology& topo, const sim::SimResult& r) {
  for (std::size_t p = 0; p < it.stage_gpus.size(); ++p) {
    const topology::NodeId first = topo.at(it.stage_gpus[p].front());
    const std::string row = fmt::format("{} ({})", p, it.stage_gpus[p].front());
    for (std::size_t i = 0; i < it.plan.tasks.size(); ++i) {
      if (r.task_device[i] != first || it.task_kind[i] == Kind::stage_transfer) continue;
      const std::string& id = it.plan.tasks[i].id;
      csv += fmt::format("{},{},{},{},{},{}\n", csv_quoted(panel), csv_quoted(row),
                         csv_quoted(bar_kind(id, it.task_kind[i])), microbatch(id),
                         r.tasks[i].start.seconds(), r.tasks[i].end.seconds());
    }
  }
}

void plot_pipeline_gantt(const std::string& png, const GanttRows& rows, const std::string& title) {
  draw_chart("plot_gantt.py", "panel,device,kind,microbatch,start_s,end_s\n" + rows.csv, {png, title}, png);
}

}  // namespace meshsim::cli
