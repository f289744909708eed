// What a simulated pipeline iteration measured: throughput, idle time and
// the critical path's share per kind of task (pipeline/iteration.h).
#include "pipeline/iteration.h"

namespace meshsim::pipeline {

using Kind = PipelineIteration::Kind;

PipelineMetrics pipeline_metrics(const PipelineIteration& it, const topology::Topology& topo,
                                 const sim::SimResult& r) {
  PipelineMetrics out;
  out.iteration_s = r.makespan.seconds();
  const int gpus = it.config.replicas() * it.config.tp * it.config.pp;
  if (out.iteration_s > 0) {
    out.samples_per_s = static_cast<double>(it.global_batch) / out.iteration_s;
    out.tflops_per_gpu = it.model_flops / out.iteration_s / gpus / 1e12;
    if (it.peak_flops > 0) out.mfu = out.tflops_per_gpu * 1e12 / it.peak_flops;
  }
  out.job = topology::job_cost(topo, gpus);
  out.cost = topology::step_cost(out.job, r.makespan, it.tokens);
  out.ideal_bubble = it.ideal_bubble;
  // Pass time per GPU: its compute time less the optimizer step.
  std::vector<double> busy_of(r.compute_busy.size(), 0.0);
  for (std::size_t i = 0; i < r.compute_busy.size(); ++i) busy_of[i] = r.compute_busy[i].seconds();
  for (std::size_t i = 0; i < it.plan.tasks.size(); ++i)
    if (it.task_kind[i] == Kind::optimizer)
      busy_of[r.task_device[i]] -= (r.tasks[i].end - r.tasks[i].start).seconds();
  double bubble_sum = 0;
  double idle_sum = 0;
  int counted = 0;
  for (const auto& names : it.stage_gpus)
    for (const auto& name : names) {
      const double busy = busy_of[topo.at(name)];
      if (busy <= 0) continue;
      bubble_sum += (out.iteration_s - busy) / busy;
      idle_sum += out.iteration_s > 0 ? (out.iteration_s - busy) / out.iteration_s : 0;
      ++counted;
    }
  out.bubble = counted > 0 ? bubble_sum / counted : 0;
  out.idle_fraction = counted > 0 ? idle_sum / counted : 0;
  for (std::size_t i : r.critical_path) {
    const double dur = (r.tasks[i].end - r.tasks[i].start).seconds();
    switch (it.task_kind[i]) {
      case Kind::compute: out.critical_compute_s += dur; break;
      case Kind::tp_allreduce: out.critical_tp_s += dur; break;
      case Kind::stage_transfer: out.critical_transfer_s += dur; break;
      case Kind::dp_allreduce: out.critical_dp_s += dur; break;
      case Kind::optimizer: out.critical_optimizer_s += dur; break;
      case Kind::expert_alltoall: out.critical_ep_s += dur; break;
      case Kind::context_exchange: out.critical_cp_s += dur; break;
    }
  }
  return out;
}

}  // namespace meshsim::pipeline
