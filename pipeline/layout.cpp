#include "pipeline/layout.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_limit.h"
#include "pipeline/layer_split.h"
#include "pipeline/pass_kernels.h"
#include "plan/plan.h"
#include "sim/kernel/engine.h"
#include "sim/kernel/numeric.h"

namespace meshsim::pipeline {

namespace {

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

}  // namespace

PipelineRanks::PipelineRanks(const topology::Topology& topo, const PipelineConfig& cfg,
                             const std::vector<sim::DeviceModel>& device_models)
    : topo_(topo), cfg_(cfg) {
  const int gpus = cfg.gpus();
  const auto& all = topo.gpus();
  if (static_cast<std::size_t>(cfg.first_gpu) + static_cast<std::size_t>(gpus) > all.size())
    throw UsageError(fmt::format("{} = {} GPUs from GPU {}, but {} has {} GPUs", model::degrees(cfg), gpus,
                                 cfg.first_gpu, topo.name, all.size()));
  if (cfg.gpus_per_host > 0) {
    const auto& first = topo.node(all[at(cfg.first_gpu)]);
    const int offset = topo.gpu_index(all[at(cfg.first_gpu)]);
    for (int i = 0; i < gpus; ++i) {
      const int host = first.host + i / cfg.gpus_per_host;
      const int k = offset + i % cfg.gpus_per_host;
      if (host >= topo.host_count() || k >= static_cast<int>(topo.host_gpus(host).size()))
        throw UsageError(
            fmt::format("{} GPUs at {} per host from GPU {} need GPU {} of host {}, which {} lacks", gpus,
                        cfg.gpus_per_host, cfg.first_gpu, k, host, topo.name));
      gpus_.push_back(topo.host_gpus(host)[at(k)]);
    }
  } else {
    gpus_.assign(all.begin() + cfg.first_gpu, all.begin() + cfg.first_gpu + gpus);
  }
  for (topology::NodeId g : gpus_) {
    const auto& node = topo.node(g);
    const sim::DeviceModel* dm = sim::find_device_model(node.model, device_models);
    if (dm == nullptr)
      throw UsageError(fmt::format("GPU {} (model '{}') has no compute model", node.name, node.model));
    if (model_ == nullptr) model_ = dm;
  }
}

int job_hosts(const topology::Topology& topo, const PipelineConfig& cfg) {
  const auto& all = topo.gpus();
  const std::int64_t last = std::int64_t{cfg.first_gpu} + cfg.gpus() - 1;
  if (all.empty() || last < 0) return 0;
  if (cfg.gpus_per_host > 0 && static_cast<std::size_t>(cfg.first_gpu) < all.size()) {
    const std::int64_t hosts = topo.node(all[at(cfg.first_gpu)]).host +
                               (std::int64_t{cfg.gpus()} + cfg.gpus_per_host - 1) / cfg.gpus_per_host;
    return static_cast<int>(std::min<std::int64_t>(hosts, topo.host_count()));
  }
  if (last >= static_cast<std::int64_t>(all.size())) return topo.host_count();
  return topo.node(all[static_cast<std::size_t>(last)]).host + 1;
}

topology::NodeId PipelineRanks::gpu(int t, int d, int p) const {
  return gpus_[at(t + cfg_.tp * (d + cfg_.replicas() * p))];
}

const std::string& PipelineRanks::name(int t, int d, int p) const {
  return topo_.node(gpu(t, d, p)).name;
}

std::vector<std::vector<std::string>> PipelineRanks::stage_gpus() const {
  std::vector<std::vector<std::string>> out(at(cfg_.pp));
  for (int p = 0; p < cfg_.pp; ++p)
    for (int d = 0; d < cfg_.replicas(); ++d)
      for (int t = 0; t < cfg_.tp; ++t) out[at(p)].push_back(name(t, d, p));
  return out;
}

std::vector<std::string> PipelineRanks::placement_notes() const {
  std::vector<std::string> out;
  const auto all = topo_.gpus().size();
  if (gpus_.size() < all)
    out.push_back(fmt::format("{} uses {} of the topology's {} GPUs: {} stay idle", model::degrees(cfg_),
                              gpus_.size(), all, all - gpus_.size()));
  for (int p = 0; p < cfg_.pp; ++p)
    for (int d = 0; d < cfg_.replicas(); ++d)
      for (int t = 1; t < cfg_.tp; ++t)
        if (topo_.node(gpu(t, d, p)).host != topo_.node(gpu(0, d, p)).host) {
          out.push_back(fmt::format(
              "tensor parallelism of {} spans hosts ({} and {} are in one group): its all-reduces cross the "
              "network",
              cfg_.tp, name(0, d, p), name(t, d, p)));
          return out;
        }
  return out;
}

std::vector<int> balanced_split(const std::vector<double>& costs, int parts) {
  const int n = static_cast<int>(costs.size());
  if (parts < 1 || n < parts)
    throw UsageError(fmt::format("cannot split {} layers into {} non-empty stages", n, parts));
  std::vector<double> prefix(at(n) + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[at(i) + 1] = prefix[at(i)] + costs[at(i)];
  const auto sum = [&](int a, int b) { return prefix[at(b)] - prefix[at(a)]; };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[k][j]: the least largest part splitting the first j costs into k parts.
  std::vector<std::vector<double>> best(at(parts) + 1, std::vector<double>(at(n) + 1, kInf));
  std::vector<std::vector<int>> cut(best.size(), std::vector<int>(at(n) + 1, 0));
  for (int j = 1; j <= n; ++j) best[1][at(j)] = sum(0, j);
  for (int k = 2; k <= parts; ++k)
    for (int j = k; j <= n; ++j)
      for (int i = k - 1; i < j; ++i) {
        const double v = std::max(best[at(k) - 1][at(i)], sum(i, j));
        // Equal splits up to rounding are a tie (sim/kernel/numeric.h): the first is kept.
        if (v < best[at(k)][at(j)] * (1 - sim::kernel::kTie)) {
          best[at(k)][at(j)] = v;
          cut[at(k)][at(j)] = i;
        }
      }
  std::vector<int> bounds(at(parts) + 1, 0);
  bounds.back() = n;
  for (int k = parts, j = n; k > 1; --k) {
    j = cut[at(k)][at(j)];
    bounds[at(k) - 1] = j;
  }
  return bounds;
}

namespace {
double output_bytes(const model::Model& model, const model::LayerCost& l) {
  return static_cast<double>(plan::Tensor{"", l.output_shape, model.dtype}.bytes().count());
}
}  // namespace

// Expert parallelism needs experts to share: an MoE model, ep dividing the
// replicas and the experts; the busiest rank takes at least the mean and at
// most every routed token.
void check_expert_parallel(const model::Model& model, const model::ParallelConfig& cfg) {
  const bool moe = model.architecture && model.architecture->moe;
  if (cfg.ep < 1) throw UsageError("the expert-parallel degree must be at least 1");
  if (cfg.ep > 1 && !moe)
    throw UsageError(fmt::format("expert parallelism needs experts: {} has no MoE layers", model.name));
  if (cfg.replicas() % cfg.ep != 0)
    throw UsageError(
        fmt::format("expert parallelism of {} takes its ranks from the data{} replicas: it must divide {}",
                    cfg.ep, cfg.cp > 1 ? " and context" : "",
                    cfg.cp > 1 ? fmt::format("dp x cp = {}", cfg.replicas()) : fmt::format("dp {}", cfg.dp)));
  if (moe && model.architecture->moe->experts % cfg.ep != 0)
    throw UsageError(fmt::format("{} experts do not split over {} expert-parallel ranks",
                                 model.architecture->moe->experts, cfg.ep));
  if (!(cfg.expert_skew >= 1 && cfg.expert_skew <= cfg.ep))
    throw UsageError(
        fmt::format("the expert skew (the busiest rank's tokens over the mean) is between 1 and "
                    "ep = {}, got {}",
                    cfg.ep, cfg.expert_skew));
}

std::vector<std::vector<PipelineOp>> checked_ops(const model::Model& model,
                                                 const model::ParallelConfig& cfg) {
  refuse_huge_plan(cfg);  // before the schedule's lists are allocated
  auto ops = make_schedule(cfg.schedule, cfg.pp, cfg.microbatches, cfg.virtual_stages);  // validates
  const int stages = cfg.pp * cfg.virtual_stages;
  if (static_cast<int>(model.layers.size()) < stages)
    throw UsageError(fmt::format("{} has {} layers, fewer than the {} pipeline stages", model.name,
                                 model.layers.size(), stages));
  model::check_tensor_parallel(model, cfg.tp);
  check_stage_starts(cfg.stage_starts, stages, static_cast<int>(model.layers.size()));
  check_expert_parallel(model, cfg);
  model::check_context_parallel(model, cfg.cp, cfg.flash_attention);
  if (cfg.fp8 && !model.architecture)
    throw UsageError(fmt::format(
        "FP8 runs the transformer layers' weight GEMMs: {} has no transformer layers", model.name));
  if (cfg.full_recompute() && cfg.schedule == model::Schedule::zb_h1)
    throw UsageError(
        "zb-h1 does not combine with recomputation: its W passes need the activations a recomputing "
        "backward rebuilds and drops");
  return ops;
}

void check_stage_starts(const std::vector<int>& starts, int stages, int layers) {
  if (starts.empty()) return;
  if (static_cast<int>(starts.size()) != stages)
    throw UsageError(
        fmt::format("the stage split names {} first layers for {} stages", starts.size(), stages));
  if (starts.front() != 0) throw UsageError("the stage split's first stage starts at layer 0");
  for (std::size_t s = 1; s < starts.size(); ++s)
    if (starts[s] <= starts[s - 1] || starts[s] >= layers)
      throw UsageError(
          fmt::format("the stage split's first layers must rise and stay below the {} layers "
                      "(stage {} starts at {})",
                      layers, s, starts[s]));
}

std::vector<VirtualStage> split_stages(const model::Model& model, int stages,
                                       const model::ActivationOptions& o, std::vector<int>& stage_of,
                                       const std::vector<int>& starts) {
  model::ActivationOptions inputs_only = o;
  inputs_only.recompute = model::Recompute::full;
  std::vector<int> bounds = starts;
  if (bounds.empty()) {
    std::vector<double> costs;
    for (const auto& l : model.layers) costs.push_back(l.forward_flops);
    bounds = balanced_split(costs, stages);
  } else {
    bounds.push_back(static_cast<int>(model.layers.size()));
  }
  stage_of.assign(model.layers.size(), 0);
  std::vector<VirtualStage> out;
  for (int s = 0; s < stages; ++s) {
    VirtualStage vs;
    vs.first_layer = bounds[at(s)];
    vs.end_layer = bounds[at(s) + 1];
    for (int l = vs.first_layer; l < vs.end_layer; ++l) {
      const model::LayerCost& lc = model.layers[at(l)];
      stage_of[at(l)] = s;
      vs.forward_flops += lc.forward_flops;
      vs.param_bytes += lc.param_bytes;
      const double act = model::activation_bytes(model, lc, o);
      vs.activation_bytes += act;
      vs.largest_layer_activation_bytes = std::max(vs.largest_layer_activation_bytes, act);
      if (l > 0)  // a context rank's share of the previous layer's output
        vs.checkpoint_bytes += lc.transformer ? model::activation_bytes(model, lc, inputs_only)
                                              : output_bytes(model, model.layers[at(l - 1)]) / o.cp;
      vs.tp_allreduce_bytes += model::tp_allreduce_bytes(model, lc) / o.cp;
      vs.expert_param_bytes += lc.expert_param_bytes;
      if (lc.moe)  // every token's k copies sent to their experts and back, s·k·h elements each way
        vs.expert_exchange_bytes +=
            2 * output_bytes(model, lc) * static_cast<double>(model.architecture->moe->top_k) / o.cp;
      vs.context_exchange_bytes += model::kv_bytes(model, lc);
    }
    out.push_back(vs);
  }
  return out;
}

namespace {
// One transfer of a tensor of layer `l` to every later stage holding one of its readers.
void transfers_of(std::vector<StageTransfer>& out, const model::Model& model,
                  const std::vector<int>& stage_of, std::size_t l, int side_output,
                  const std::vector<std::int64_t>& shape, const std::vector<int>& readers,
                  int microbatch_size, int cp) {
  std::vector<int> dst_stages;
  for (int r : readers) {
    const int to = stage_of[at(r)];
    if (to != stage_of[l] && std::find(dst_stages.begin(), dst_stages.end(), to) == dst_stages.end())
      dst_stages.push_back(to);
  }
  std::sort(dst_stages.begin(), dst_stages.end());
  for (int to : dst_stages) {
    StageTransfer x;
    x.src_stage = stage_of[l];
    x.dst_stage = to;
    x.layer = static_cast<int>(l);
    x.side_output = side_output;
    x.shape.push_back(microbatch_size);
    x.shape.insert(x.shape.end(), shape.begin(), shape.end());
    if (x.shape.size() > 1) x.shape[1] /= cp;  // the sequence, split over the context ranks
    x.bytes = plan::Tensor{"", x.shape, model.dtype}.bytes();
    out.push_back(std::move(x));
  }
}
}  // namespace

std::vector<StageTransfer> stage_transfers(const model::Model& model, const std::vector<int>& stage_of,
                                           int microbatch_size, int cp) {
  std::vector<StageTransfer> out;
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    const model::LayerCost& lc = model.layers[l];
    std::vector<int> readers = lc.skip_to;
    if (l + 1 < model.layers.size()) readers.push_back(static_cast<int>(l) + 1);
    transfers_of(out, model, stage_of, l, -1, lc.output_shape, readers, microbatch_size, cp);
    for (std::size_t k = 0; k < lc.side_outputs.size(); ++k)
      transfers_of(out, model, stage_of, l, static_cast<int>(k), lc.side_outputs[k].shape,
                   lc.side_outputs[k].to, microbatch_size, cp);
  }
  return out;
}

PassCost pass_cost(const VirtualStage& vs, Pass pass, int microbatch_size, int tp, bool split_backward,
                   bool recompute) {
  const double f = microbatch_size * vs.forward_flops / tp;
  PassCost c;
  c.flops = pass == Pass::forward || split_backward ? f : 2 * f;
  if (recompute && pass == Pass::backward) c.flops += f;
  c.bytes = checked_bytes(vs.param_bytes / tp, "a stage's weights");
  return c;
}

VirtualStage layer_range(const model::Model& model, const VirtualStage& vs, int first, int end) {
  VirtualStage out;
  out.first_layer = first;
  out.end_layer = end;
  for (int l = first; l < end; ++l) {
    const model::LayerCost& lc = model.layers[at(l)];
    const std::size_t in_stage = at(l - vs.first_layer);
    const bool by_batch = in_stage < vs.splits.size() && vs.splits[in_stage] == model::LayerSplit::batch;
    if (in_stage < vs.splits.size()) out.splits.push_back(vs.splits[in_stage]);
    out.forward_flops += lc.forward_flops;
    out.param_bytes += lc.param_bytes;
    out.expert_param_bytes += lc.expert_param_bytes;
    if (by_batch) out.batch_param_bytes += lc.param_bytes;
  }
  return out;
}

std::vector<VirtualStage> grad_buckets(const model::Model& model, const VirtualStage& vs,
                                       const model::ParallelConfig& cfg) {
  const double elem = static_cast<double>(plan::dtype_size(model.dtype));
  const double limit = cfg.grad_bucket_params();
  std::vector<VirtualStage> out;
  int end = vs.end_layer;
  double held = 0;
  for (int l = vs.end_layer - 1; l >= vs.first_layer; --l) {
    const model::LayerCost& lc = model.layers[at(l)];
    held += ((lc.param_bytes - lc.expert_param_bytes) / cfg.tp + lc.expert_param_bytes / (cfg.tp * cfg.ep)) /
            elem;
    if (held >= limit || l == vs.first_layer) {
      out.push_back(layer_range(model, vs, l, end));
      end = l;
      held = 0;
    }
  }
  return out;
}

double rank_param_bytes(const VirtualStage& vs, int tp, int ep) {
  return (vs.param_bytes - vs.batch_param_bytes - vs.expert_param_bytes) / tp +
         vs.expert_param_bytes / (tp * ep) + vs.batch_param_bytes;
}

std::vector<DeviceMemory> device_memory(const model::Model& model, const std::vector<VirtualStage>& stages,
                                        const std::vector<std::vector<PipelineOp>>& ops,
                                        const model::ParallelConfig& cfg) {
  const double elem = static_cast<double>(plan::dtype_size(model.dtype));
  const model::StatePrecision state = model::state_precision(elem);
  const Pass frees = cfg.schedule == model::Schedule::zb_h1 ? Pass::weight : Pass::backward;
  std::vector<DeviceMemory> out;
  for (int p = 0; p < cfg.pp; ++p) {
    DeviceMemory mem;
    double experts = 0;  // of mem.params, the routed experts' (their replicas: dp / ep)
    for (int c = 0; c < cfg.virtual_stages; ++c) {
      const VirtualStage& vs = stages[at(c * cfg.pp + p)];
      mem.params += rank_param_bytes(vs, cfg.tp, cfg.ep) / elem;
      experts += vs.expert_param_bytes / (cfg.tp * cfg.ep) / elem;
    }
    // Per state part, its bytes per parameter, each kind of parameter sharded over its replicas.
    auto sharded = [&](double bytes_per_param, model::ZeroStage from) {
      if (cfg.zero < from) return mem.params * bytes_per_param;
      const double replicas = cfg.replicas();
      return ((mem.params - experts) / replicas + experts / (replicas / cfg.ep)) * bytes_per_param;
    };
    mem.weights_bytes = sharded(state.weights, model::ZeroStage::parameters);
    mem.gradient_bytes = sharded(state.gradients, model::ZeroStage::gradients);
    mem.optimizer_bytes = sharded(state.optimizer, model::ZeroStage::optimizer);
    if (cfg.zero == model::ZeroStage::parameters && cfg.replicas() > 1) {
      // FSDP holds a layer's gathered weights while it runs and the next
      // layer's, prefetched: twice the largest layer's share of one tensor rank.
      double largest = 0;
      for (int c = 0; c < cfg.virtual_stages; ++c) {
        const VirtualStage& vs = stages[at(c * cfg.pp + p)];
        for (int l = vs.first_layer; l < vs.end_layer; ++l)
          largest = std::max(largest, model.layers[at(l)].param_bytes / cfg.tp / elem);
      }
      mem.weights_bytes += 2 * largest * state.weights;
    }
    mem.training_state_bytes = mem.weights_bytes + mem.gradient_bytes + mem.optimizer_bytes;
    double held = 0;
    int count = 0;
    for (const PipelineOp& op : ops[at(p)]) {
      const VirtualStage& vs = stages[at(op.chunk * cfg.pp + p)];
      const double act =
          cfg.microbatch_size * (cfg.full_recompute() ? vs.checkpoint_bytes : vs.activation_bytes);
      if (op.pass == Pass::forward) {
        held += act;
        ++count;
        if (held > mem.activation_bytes) {
          mem.activation_bytes = held;
          mem.peak_in_flight = count;
        }
      } else if (op.pass == frees) {
        held -= act;
        --count;
      }
    }
    if (cfg.full_recompute()) {  // a backward rebuilds one layer's activations at a time
      double rebuilt = 0;
      for (int c = 0; c < cfg.virtual_stages; ++c)
        rebuilt = std::max(rebuilt, stages[at(c * cfg.pp + p)].largest_layer_activation_bytes);
      mem.activation_bytes += cfg.microbatch_size * rebuilt;
    }
    out.push_back(mem);
  }
  return out;
}

std::vector<VirtualStage> laid_out_stages(const model::Model& model, const model::ParallelConfig& cfg,
                                          const std::vector<std::vector<PipelineOp>>& ops,
                                          std::vector<int>& stage_of, double capacity) {
  std::vector<VirtualStage> stages =
      split_stages(model, cfg.pp * cfg.virtual_stages, cfg.activation_options(), stage_of, cfg.stage_starts);
  std::vector<double> free;
  if (capacity > 0 && layers_can_split(model, cfg))  // else nothing to fit
    for (const DeviceMemory& d : device_memory(model, stages, ops, cfg)) free.push_back(capacity - d.total());
  choose_layer_splits(model, stages, cfg, free);
  return stages;
}

namespace {

// Every microbatch passes every virtual stage forward and backward (and
// zb-h1's weight pass): counted in doubles, before the schedule is made.
double plan_passes(const model::ParallelConfig& cfg) {
  const double per_microbatch = cfg.schedule == model::Schedule::zb_h1 ? 3 : 2;
  return per_microbatch * static_cast<double>(cfg.pp) * static_cast<double>(cfg.virtual_stages) *
         static_cast<double>(cfg.microbatches);
}

double plan_tasks(const model::ParallelConfig& cfg) {
  const double replicas = static_cast<double>(cfg.dp) * static_cast<double>(cfg.cp);
  return plan_passes(cfg) * replicas * (cfg.tp > 1 ? 2 : 1);
}

// What building and simulating a plan holds per task, transfers
// included: measured at 760 B per pass (pp 4, 65,536 microbatches:
// 389,384 KiB at its peak for 524,288 passes), rounded up.
constexpr double kBytesPerTask = 768;

}  // namespace

double plan_bytes(const model::ParallelConfig& cfg) {
  return plan_tasks(cfg) * kBytesPerTask;
}

void refuse_huge_plan(const model::ParallelConfig& cfg) {
  const double tasks = plan_tasks(cfg);
  if (tasks > static_cast<double>(plan::kMaxPlanTasks))
    throw UsageError(fmt::format(
        "the iteration's plan would have at least {:.0f} tasks ({:.0f} passes x {} replicas{}), more than "
        "the {} a plan may have: use fewer or larger microbatches, or fewer virtual stages",
        tasks, plan_passes(cfg), static_cast<double>(cfg.dp) * static_cast<double>(cfg.cp),
        cfg.tp > 1 ? " x 2 with the tensor all-reduces" : "", plan::kMaxPlanTasks));
  require_memory(plan_bytes(cfg), fmt::format("the iteration's plan ({:.0f} tasks or more)", tasks),
                 "use fewer or larger microbatches, or fewer virtual stages");
}

std::vector<PassTimes> ideal_pass_times(const std::vector<VirtualStage>& stages,
                                        const model::ParallelConfig& cfg, const sim::DeviceModel& dm,
                                        const model::Model& model) {
  const bool split = cfg.schedule == model::Schedule::zb_h1;
  std::vector<PassTimes> times;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const VirtualStage& vs = stages[s];
    auto time_of = [&](Pass p) {
      try {
        if (auto k = pass_kernels(model, vs, p, pass_options(cfg))) return dm.kernels_time(*k).seconds();
        const PassCost c = pass_cost(vs, p, cfg.microbatch_size, cfg.tp, split, cfg.full_recompute());
        return dm.kernel_time(c.flops, c.bytes, model.dtype).seconds();
      } catch (const sim::kernel::ClockOverflow& e) {
        throw UsageError(fmt::format("stage {}'s {} pass of a microbatch of {} samples: {}", s,
                                     p == Pass::forward    ? "forward"
                                     : p == Pass::backward ? "backward"
                                                           : "weight",
                                     cfg.microbatch_size, e.what()));
      }
    };
    PassTimes pt;
    pt.forward = time_of(Pass::forward);
    pt.backward = time_of(Pass::backward);
    pt.weight = split ? time_of(Pass::weight) : 0;
    times.push_back(pt);
  }
  return times;
}

}  // namespace meshsim::pipeline
