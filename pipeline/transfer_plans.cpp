#include "pipeline/transfer_plans.h"

#include <utility>

#include <fmt/format.h>

namespace meshsim::pipeline {

namespace {

TransferPlan make_transfer_plan(plan::Plan fragment, std::string strategy) {
  TransferPlan t;
  t.strategy = std::move(strategy);
  std::vector<bool> depended(fragment.tasks.size(), false);
  for (const plan::Task& task : fragment.tasks)
    for (std::size_t d : task.deps) depended[d] = true;
  for (std::size_t i = 0; i < fragment.tasks.size(); ++i)
    if (!depended[i]) t.sinks.push_back(i);
  for (plan::Task& task : fragment.tasks) t.ids.push_back(std::exchange(task.id, {}));
  t.fragment = std::move(fragment);
  return t;
}

}  // namespace

void TransferPlans::fit(const topology::Topology& t) {
  if (topo_ != &t || plans_.size() >= kMaxPlans) {
    plans_.clear();
    topo_ = &t;
  }
}

const TransferPlan& TransferPlans::plan(reshard::ReshardProblem prob, const PipelineConfig& cfg) {
  const auto& shape = prob.tensor.shape;
  key_.assign({prob.tensor.name == "grad", static_cast<std::int64_t>(prob.tensor.dtype),
               static_cast<std::int64_t>(cfg.reshard), cfg.reshard_auto,
               static_cast<std::int64_t>(cfg.balance), cfg.payloads});
  key_.insert(key_.end(), shape.begin(), shape.end());
  key_.push_back(-1);
  for (const topology::NodeId n : prob.src.devices) key_.push_back(n);
  key_.push_back(-1);
  for (const topology::NodeId n : prob.dst.devices) key_.push_back(n);
  if (auto found = plans_.find(key_); found != plans_.end()) return found->second;
  prob.src_spec.dims.assign(shape.size(), {});
  prob.dst_spec.dims.assign(shape.size(), {});
  const auto units = reshard::unit_tasks(prob);
  plan::Plan sub;
  std::string strategy;
  if (cfg.reshard_auto) {
    reshard::AutoPlan a = reshard::plan_auto(*topo_, prob, units);
    sub = std::move(a.plan);
    strategy = fmt::format("auto: {}", to_string(a.strategy));
  } else {
    sub = reshard::build_plan(*topo_, prob, units, cfg.reshard, cfg.balance);
    strategy = std::string(to_string(cfg.reshard));
  }
  // Without payloads the stamps copy none: no regions to copy and drop per microbatch.
  if (!cfg.payloads)
    for (plan::Task& task : sub.tasks) task.payload.clear();
  return plans_.emplace(key_, make_transfer_plan(std::move(sub), std::move(strategy))).first->second;
}

}  // namespace meshsim::pipeline
