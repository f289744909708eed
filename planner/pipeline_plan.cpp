#include "planner/pipeline_plan.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "topology/mesh.h"

namespace meshsim::planner {

namespace {

using Kind = PipelineIteration::Kind;

// Adam with fp32 master weights: reads the fp16 gradient and the fp32
// master, m and v (14 bytes), writes master, m, v and the fp16 weights (14).
constexpr double kOptimizerBytesPerParam = 28;

constexpr int kComputeStream = 0;
constexpr int kForwardStream = 1;   // + s mod 2
constexpr int kBackwardStream = 3;  // + s mod 2
constexpr int kDataParallelStream = 5;

// A resharding plan for one transfer, ready to be stamped out per microbatch.
struct Template {
  std::vector<plan::Task> tasks;   // roots (no dependencies) wait for the producing pass when stamped
  std::vector<std::size_t> sinks;  // tasks nothing inside the plan depends on
};

Template make_template(plan::Plan plan) {
  Template t;
  std::vector<bool> depended(plan.tasks.size(), false);
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    plan::Task& task = plan.tasks[i];
    task.payload.clear();
    for (std::size_t d : task.deps) depended[d] = true;
  }
  for (std::size_t i = 0; i < plan.tasks.size(); ++i)
    if (!depended[i]) t.sinks.push_back(i);
  t.tasks = std::move(plan.tasks);
  return t;
}

}  // namespace

std::vector<int> balanced_split(const std::vector<double>& costs, int parts) {
  const int n = static_cast<int>(costs.size());
  if (parts < 1 || n < parts)
    throw UsageError(fmt::format("cannot split {} layers into {} non-empty stages", n, parts));
  std::vector<double> prefix(static_cast<std::size_t>(n) + 1, 0.0);
  for (int i = 0; i < n; ++i)
    prefix[static_cast<std::size_t>(i) + 1] =
        prefix[static_cast<std::size_t>(i)] + costs[static_cast<std::size_t>(i)];
  const auto sum = [&](int a, int b) {
    return prefix[static_cast<std::size_t>(b)] - prefix[static_cast<std::size_t>(a)];
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[k][j]: the least largest part splitting the first j costs into k parts.
  std::vector<std::vector<double>> best(static_cast<std::size_t>(parts) + 1,
                                        std::vector<double>(static_cast<std::size_t>(n) + 1, kInf));
  std::vector<std::vector<int>> cut(best.size(), std::vector<int>(static_cast<std::size_t>(n) + 1, 0));
  for (int j = 1; j <= n; ++j) best[1][static_cast<std::size_t>(j)] = sum(0, j);
  for (int k = 2; k <= parts; ++k)
    for (int j = k; j <= n; ++j)
      for (int i = k - 1; i < j; ++i) {
        const double v =
            std::max(best[static_cast<std::size_t>(k) - 1][static_cast<std::size_t>(i)], sum(i, j));
        // Relative slack so that rounding does not decide between equal splits.
        if (v < best[static_cast<std::size_t>(k)][static_cast<std::size_t>(j)] * (1 - 1e-12)) {
          best[static_cast<std::size_t>(k)][static_cast<std::size_t>(j)] = v;
          cut[static_cast<std::size_t>(k)][static_cast<std::size_t>(j)] = i;
        }
      }
  std::vector<int> bounds(static_cast<std::size_t>(parts) + 1, 0);
  bounds.back() = n;
  for (int k = parts, j = n; k > 1; --k) {
    j = cut[static_cast<std::size_t>(k)][static_cast<std::size_t>(j)];
    bounds[static_cast<std::size_t>(k) - 1] = j;
  }
  return bounds;
}

PipelineIteration build_pipeline(const Model& model, const topology::Topology& topo,
                                 const ParallelConfig& cfg,
                                 const std::vector<sim::DeviceModel>& device_models) {
  if (cfg.dp < 1 || cfg.tp < 1 || cfg.pp < 1 || cfg.microbatches < 1 || cfg.microbatch_size < 1 ||
      cfg.virtual_stages < 1 || cfg.first_gpu < 0)
    throw UsageError("dp, tp, pp, microbatches, microbatch size and virtual stages must be at least 1");
  const int pp = cfg.pp;
  const int v = cfg.virtual_stages;
  const int m = cfg.microbatches;
  const int b = cfg.microbatch_size;
  const int gpus = cfg.dp * cfg.tp * pp;
  const auto& all_gpus = topo.gpus();
  if (static_cast<std::size_t>(cfg.first_gpu) + static_cast<std::size_t>(gpus) > all_gpus.size())
    throw UsageError(fmt::format("dp {} × tp {} × pp {} = {} GPUs from GPU {}, but {} has {} GPUs", cfg.dp,
                                 cfg.tp, pp, gpus, cfg.first_gpu, topo.name, all_gpus.size()));
  const auto ops = make_schedule(cfg.schedule, pp, m, v);  // validates schedule, m and v
  const int stages = pp * v;
  if (static_cast<int>(model.layers.size()) < stages)
    throw UsageError(fmt::format("{} has {} layers, fewer than the {} pipeline stages", model.name,
                                 model.layers.size(), stages));

  PipelineIteration it;
  it.config = cfg;
  it.global_batch = cfg.dp * m * b;
  it.model_flops = 3 * model.forward_flops() * it.global_batch;
  const double elem = static_cast<double>(plan::dtype_size(model.dtype));

  auto gpu_at = [&](int t, int d, int p) {
    return all_gpus[static_cast<std::size_t>(cfg.first_gpu + t + cfg.tp * (d + cfg.dp * p))];
  };
  const sim::DeviceModel* dev_model = nullptr;
  for (int i = 0; i < gpus; ++i) {
    const auto& node = topo.node(all_gpus[static_cast<std::size_t>(cfg.first_gpu + i)]);
    const sim::DeviceModel* dm = sim::find_device_model(node.model, device_models);
    if (!dm) throw UsageError(fmt::format("GPU {} (model '{}') has no compute model", node.name, node.model));
    if (!dev_model) dev_model = dm;
  }
  it.stage_gpus.resize(static_cast<std::size_t>(pp));
  for (int p = 0; p < pp; ++p)
    for (int d = 0; d < cfg.dp; ++d)
      for (int t = 0; t < cfg.tp; ++t)
        it.stage_gpus[static_cast<std::size_t>(p)].push_back(topo.node(gpu_at(t, d, p)).name);

  // Virtual stages: contiguous layer ranges balancing forward FLOPs.
  std::vector<double> costs;
  for (const auto& l : model.layers) costs.push_back(l.forward_flops);
  const auto bounds = balanced_split(costs, stages);
  std::vector<int> stage_of(model.layers.size(), 0);
  for (int s = 0; s < stages; ++s) {
    VirtualStage vs;
    vs.first_layer = bounds[static_cast<std::size_t>(s)];
    vs.end_layer = bounds[static_cast<std::size_t>(s) + 1];
    for (int l = vs.first_layer; l < vs.end_layer; ++l) {
      const LayerCost& lc = model.layers[static_cast<std::size_t>(l)];
      stage_of[static_cast<std::size_t>(l)] = s;
      vs.forward_flops += lc.forward_flops;
      vs.param_bytes += lc.param_bytes;
      vs.activation_bytes += activation_bytes(model, lc, cfg.tp);
      const double out = static_cast<double>(plan::Tensor{"", lc.output_shape, model.dtype}.bytes().count());
      vs.tp_allreduce_bytes += lc.tp_allreduces * out;
    }
    it.stages.push_back(vs);
  }

  // Tensors crossing stages: each layer's output to the stages of its readers.
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    const LayerCost& lc = model.layers[l];
    std::vector<int> dst_stages;
    const std::size_t readers = lc.skip_to.size() + (l + 1 < model.layers.size() ? 1 : 0);
    for (std::size_t k = 0; k < readers; ++k) {
      const int r = k < lc.skip_to.size() ? lc.skip_to[k] : static_cast<int>(l) + 1;
      const int to = stage_of[static_cast<std::size_t>(r)];
      if (to != stage_of[l] && std::find(dst_stages.begin(), dst_stages.end(), to) == dst_stages.end())
        dst_stages.push_back(to);
    }
    std::sort(dst_stages.begin(), dst_stages.end());
    for (int to : dst_stages) {
      StageTransfer x;
      x.src_stage = stage_of[l];
      x.dst_stage = to;
      x.layer = static_cast<int>(l);
      x.shape.push_back(b);
      x.shape.insert(x.shape.end(), lc.output_shape.begin(), lc.output_shape.end());
      x.bytes = plan::Tensor{"", x.shape, model.dtype}.bytes();
      it.transfers.push_back(std::move(x));
    }
  }

  // Pass times without communication: the order tasks are emitted in.
  const bool split_backward = cfg.schedule == Schedule::zb_h1;
  auto pass_flops = [&](int s, Pass p) {
    const double f = b * it.stages[static_cast<std::size_t>(s)].forward_flops / cfg.tp;
    if (p == Pass::forward) return f;
    return split_backward ? f : 2 * f;
  };
  auto pass_bytes = [&](int s) {
    return Bytes(static_cast<std::int64_t>(it.stages[static_cast<std::size_t>(s)].param_bytes / cfg.tp));
  };
  std::vector<PassTimes> times;
  for (int s = 0; s < stages; ++s) {
    PassTimes pt;
    pt.forward = dev_model->kernel_time(pass_flops(s, Pass::forward), pass_bytes(s), model.dtype).seconds();
    pt.backward = dev_model->kernel_time(pass_flops(s, Pass::backward), pass_bytes(s), model.dtype).seconds();
    pt.weight = split_backward ? pt.forward : 0;  // W does the forward's FLOPs, as pass_flops says
    times.push_back(pt);
  }
  const ScheduleTimeline ideal = timeline(ops, pp, v, times, 0);
  it.ideal_bubble = ideal.bubble;
  it.ideal_makespan_s = ideal.makespan;

  // Resharding plans, one per (transfer, direction, replica).
  plan::Plan& plan = it.plan;
  plan.name =
      fmt::format("{} dp{} tp{} pp{} {} m{}", model.name, cfg.dp, cfg.tp, pp, to_string(cfg.schedule), m);
  auto mesh_of = [&](int p, int d) {
    topology::DeviceMesh mesh;
    mesh.rows = 1;
    mesh.cols = cfg.tp;
    for (int t = 0; t < cfg.tp; ++t) mesh.devices.push_back(gpu_at(t, d, p));
    return mesh;
  };
  std::map<std::tuple<std::size_t, bool, int>, Template> templates;
  auto template_for = [&](std::size_t x, bool backward, int d) -> const Template* {
    const StageTransfer& tr = it.transfers[x];
    const int src_dev = (backward ? tr.dst_stage : tr.src_stage) % pp;
    const int dst_dev = (backward ? tr.src_stage : tr.dst_stage) % pp;
    if (src_dev == dst_dev) return nullptr;  // the same GPUs (pp = 1): nothing moves
    auto key = std::make_tuple(x, backward, d);
    auto found = templates.find(key);
    if (found != templates.end()) return &found->second;
    ReshardProblem prob;
    prob.tensor = {backward ? "grad" : "act", tr.shape, model.dtype};
    prob.src = mesh_of(src_dev, d);
    prob.dst = mesh_of(dst_dev, d);
    prob.src_spec.dims.assign(tr.shape.size(), {});
    prob.dst_spec.dims.assign(tr.shape.size(), {});
    const auto units = unit_tasks(prob);
    plan::Plan sub;
    std::string strategy;
    if (cfg.reshard_auto) {
      AutoPlan a = plan_auto(topo, prob, units);
      sub = std::move(a.plan);
      strategy = fmt::format("auto: {}", to_string(a.strategy));
    } else {
      sub = build_plan(topo, prob, units, cfg.reshard, cfg.balance);
      strategy = std::string(to_string(cfg.reshard));
    }
    if (!backward && d == 0) it.transfers[x].strategy = strategy;
    return &templates.emplace(key, make_template(std::move(sub))).first->second;
  };

  auto add_task = [&](plan::Task t, Kind k) {
    plan.tasks.push_back(std::move(t));
    it.task_kind.push_back(k);
    return plan.tasks.size() - 1;
  };
  // Stamps a template out; its roots wait for `after`. Returns its sinks.
  auto stamp = [&](const Template& tpl, const std::string& prefix, int stream,
                   const std::vector<std::size_t>& after) {
    const std::size_t base = plan.tasks.size();
    for (const plan::Task& src : tpl.tasks) {
      plan::Task t = src;
      t.id = prefix + "/" + src.id;
      t.stream = stream;
      if (t.deps.empty()) {
        t.deps = after;
      } else {
        for (auto& dep : t.deps) dep += base;
      }
      add_task(std::move(t), Kind::stage_transfer);
    }
    std::vector<std::size_t> sinks;
    for (std::size_t s : tpl.sinks) sinks.push_back(base + s);
    return sinks;
  };

  // What each pass waits for from other stages, by (backward?, stage, microbatch, replica).
  std::vector<std::vector<std::size_t>> incoming(2 * static_cast<std::size_t>(stages * m * cfg.dp));
  auto incoming_at = [&](bool backward, int stage, int mb, int d) -> std::vector<std::size_t>& {
    return incoming[static_cast<std::size_t>(((backward ? 1 : 0) * stages + stage) * m + mb) *
                        static_cast<std::size_t>(cfg.dp) +
                    static_cast<std::size_t>(d)];
  };

  // The last pass of each chunk on each device releases its DP all-reduce.
  std::vector<std::vector<std::size_t>> last_of_chunk(
      static_cast<std::size_t>(pp), std::vector<std::size_t>(static_cast<std::size_t>(v), 0));
  for (int p = 0; p < pp; ++p)
    for (std::size_t k = 0; k < ops[static_cast<std::size_t>(p)].size(); ++k) {
      const PipelineOp& op = ops[static_cast<std::size_t>(p)][k];
      if (op.pass != Pass::forward)
        last_of_chunk[static_cast<std::size_t>(p)][static_cast<std::size_t>(op.chunk)] = k;
    }

  struct Event {
    double start;
    int device;
    std::size_t index;
  };
  std::vector<Event> events;
  for (int p = 0; p < pp; ++p)
    for (std::size_t k = 0; k < ops[static_cast<std::size_t>(p)].size(); ++k)
      events.push_back({ideal.ops[static_cast<std::size_t>(p)][k].start, p, k});
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& e) {
    return a.start != e.start     ? a.start < e.start
           : a.device != e.device ? a.device < e.device
                                  : a.index < e.index;
  });

  std::map<topology::NodeId, std::vector<std::size_t>> dp_tasks_of;  // per GPU, its DP all-reduces
  for (const Event& ev : events) {
    const PipelineOp& op = ops[static_cast<std::size_t>(ev.device)][ev.index];
    const int s = op.chunk * pp + ev.device;
    const VirtualStage& vs = it.stages[static_cast<std::size_t>(s)];
    const char pass_name = op.pass == Pass::forward ? 'F' : op.pass == Pass::backward ? 'B' : 'W';
    std::vector<std::vector<std::size_t>> computes(static_cast<std::size_t>(cfg.dp));
    for (int d = 0; d < cfg.dp; ++d) {
      const std::string prefix = fmt::format("{}{}/s{}/r{}", pass_name, op.microbatch, s, d);
      std::vector<std::size_t> waits;
      if (op.pass != Pass::weight) waits = incoming_at(op.pass == Pass::backward, s, op.microbatch, d);
      std::vector<std::size_t> end;
      for (int t = 0; t < cfg.tp; ++t) {
        plan::Task c;
        c.id = fmt::format("{}/t{}", prefix, t);
        c.kind = plan::TaskKind::compute;
        c.devices = {topo.node(gpu_at(t, d, ev.device)).name};
        c.stream = kComputeStream;
        c.deps = waits;
        c.flops = pass_flops(s, op.pass);
        c.mem_bytes = pass_bytes(s);
        c.dtype = model.dtype;
        end.push_back(add_task(std::move(c), Kind::compute));
      }
      computes[static_cast<std::size_t>(d)] = end;
      const double ar_bytes = b * vs.tp_allreduce_bytes;
      if (cfg.tp > 1 && op.pass != Pass::weight && ar_bytes > 0) {
        plan::Task ar;
        ar.id = prefix + "/tp-allreduce";
        ar.kind = plan::TaskKind::collective;
        ar.op = plan::CollectiveOp::all_reduce;
        for (int t = 0; t < cfg.tp; ++t) ar.devices.push_back(topo.node(gpu_at(t, d, ev.device)).name);
        ar.stream = kComputeStream;
        ar.deps = end;
        ar.size = Bytes(static_cast<std::int64_t>(ar_bytes));
        end = {add_task(std::move(ar), Kind::tp_allreduce)};
      }
      // A forward sends each tensor its stage produces; a backward returns
      // the gradient of each tensor its stage received.
      if (op.pass == Pass::weight) continue;
      const bool backward = op.pass == Pass::backward;
      for (std::size_t x = 0; x < it.transfers.size(); ++x) {
        const StageTransfer& tr = it.transfers[x];
        if ((backward ? tr.dst_stage : tr.src_stage) != s) continue;
        const int to = backward ? tr.src_stage : tr.dst_stage;
        if (const Template* tpl = template_for(x, backward, d)) {
          auto out = stamp(*tpl, fmt::format("{}/to-s{}/l{}", prefix, to, tr.layer),
                           (backward ? kBackwardStream : kForwardStream) + s % 2, end);
          auto& in = incoming_at(backward, to, op.microbatch, d);
          in.insert(in.end(), out.begin(), out.end());
        }
      }
    }
    // Gradients of this chunk are complete: all-reduce them over the replicas.
    if (cfg.dp > 1 && op.pass != Pass::forward &&
        last_of_chunk[static_cast<std::size_t>(ev.device)][static_cast<std::size_t>(op.chunk)] == ev.index &&
        vs.param_bytes > 0) {
      for (int t = 0; t < cfg.tp; ++t) {
        plan::Task ar;
        ar.id = fmt::format("dp-allreduce/s{}/t{}", s, t);
        ar.kind = plan::TaskKind::collective;
        ar.op = plan::CollectiveOp::all_reduce;
        for (int d = 0; d < cfg.dp; ++d) {
          ar.devices.push_back(topo.node(gpu_at(t, d, ev.device)).name);
          ar.deps.push_back(computes[static_cast<std::size_t>(d)][static_cast<std::size_t>(t)]);
        }
        ar.stream = kDataParallelStream;
        ar.size = Bytes(static_cast<std::int64_t>(vs.param_bytes / cfg.tp));
        const std::size_t idx = add_task(std::move(ar), Kind::dp_allreduce);
        for (int d = 0; d < cfg.dp; ++d) dp_tasks_of[gpu_at(t, d, ev.device)].push_back(idx);
      }
    }
  }

  // The optimizer step, and the memory of each pipeline device.
  for (int p = 0; p < pp; ++p) {
    DeviceMemory mem;
    double param_bytes = 0;
    for (int c = 0; c < v; ++c) param_bytes += it.stages[static_cast<std::size_t>(c * pp + p)].param_bytes;
    const double params = param_bytes / elem / cfg.tp;
    mem.weights_bytes = param_bytes / cfg.tp;
    mem.training_state_bytes = params * kTrainingBytesPerParam;
    double held = 0;
    int count = 0;
    for (const PipelineOp& op : ops[static_cast<std::size_t>(p)]) {
      const double act = b * it.stages[static_cast<std::size_t>(op.chunk * pp + p)].activation_bytes;
      if (op.pass == Pass::forward) {
        held += act;
        ++count;
        if (held > mem.activation_bytes) {
          mem.activation_bytes = held;
          mem.peak_in_flight = count;
        }
      } else if (op.pass == (split_backward ? Pass::weight : Pass::backward)) {
        held -= act;
        --count;
      }
    }
    it.memory.push_back(mem);
    for (int d = 0; d < cfg.dp; ++d)
      for (int t = 0; t < cfg.tp; ++t) {
        const topology::NodeId g = gpu_at(t, d, p);
        plan::Task opt;
        opt.id = fmt::format("optimizer/{}", topo.node(g).name);
        opt.kind = plan::TaskKind::compute;
        opt.devices = {topo.node(g).name};
        opt.stream = kComputeStream;
        opt.deps = dp_tasks_of[g];
        opt.dtype = plan::DType::f32;
        opt.mem_bytes = Bytes(static_cast<std::int64_t>(params * kOptimizerBytesPerParam));
        add_task(std::move(opt), Kind::optimizer);
      }
  }
  return it;
}

PipelineMetrics pipeline_metrics(const PipelineIteration& it, const topology::Topology& topo,
                                 const sim::SimResult& r) {
  PipelineMetrics out;
  out.iteration_s = r.makespan.seconds();
  const int gpus = it.config.dp * it.config.tp * it.config.pp;
  if (out.iteration_s > 0) {
    out.samples_per_s = it.global_batch / out.iteration_s;
    out.tflops_per_gpu = it.model_flops / out.iteration_s / gpus / 1e12;
  }
  out.ideal_bubble = it.ideal_bubble;
  // Pass time per GPU: its compute time less the optimizer step.
  std::vector<double> busy_of(r.compute_busy.size(), 0.0);
  for (std::size_t i = 0; i < r.compute_busy.size(); ++i) busy_of[i] = r.compute_busy[i].seconds();
  for (std::size_t i = 0; i < it.plan.tasks.size(); ++i)
    if (it.task_kind[i] == Kind::optimizer)
      busy_of[r.task_device[i]] -= (r.tasks[i].end - r.tasks[i].start).seconds();
  double bubble_sum = 0;
  int counted = 0;
  for (const auto& names : it.stage_gpus)
    for (const auto& name : names) {
      const double busy = busy_of[topo.at(name)];
      if (busy <= 0) continue;
      bubble_sum += (out.iteration_s - busy) / busy;
      ++counted;
    }
  out.bubble = counted > 0 ? bubble_sum / counted : 0;
  for (std::size_t i : r.critical_path) {
    const double dur = (r.tasks[i].end - r.tasks[i].start).seconds();
    switch (it.task_kind[i]) {
      case Kind::compute: out.critical_compute_s += dur; break;
      case Kind::tp_allreduce: out.critical_tp_s += dur; break;
      case Kind::stage_transfer: out.critical_transfer_s += dur; break;
      case Kind::dp_allreduce: out.critical_dp_s += dur; break;
      case Kind::optimizer: out.critical_optimizer_s += dur; break;
    }
  }
  return out;
}

}  // namespace meshsim::planner
