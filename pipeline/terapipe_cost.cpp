// The TeraPipe cost model (pipeline/terapipe.h): the α + β costs fitted on
// the topology, memory per GPU, the weight update and the slice cost.
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "model/layer_kernels.h"
#include "pipeline/terapipe.h"
#include "sim/executor.h"

namespace meshsim::pipeline {

namespace {

// α and β from the simulated makespans of the tasks `make(plan, bytes)`
// adds (all at once), at 1 MiB and 64 MiB.
AlphaBeta fit(const topology::Topology& topo, const std::function<void(plan::Plan&, Bytes)>& make) {
  const Bytes small = Bytes::MiB(1);
  const Bytes large = Bytes::MiB(64);
  auto run = [&](Bytes b) {
    plan::Plan p;
    p.name = "terapipe-fit";
    make(p, b);
    return sim::simulate(p, topo).makespan.seconds();
  };
  const double t1 = run(small);
  const double t2 = run(large);
  AlphaBeta ab;
  ab.beta = (t2 - t1) / static_cast<double>((large - small).count());
  ab.alpha = std::max(0.0, t1 - ab.beta * static_cast<double>(small.count()));
  return ab;
}

// A collective `op` of `bytes` over `gpus` (names), added to `p`.
void add_collective(plan::Plan& p, const std::string& id, const std::vector<std::string>& gpus, Bytes bytes,
                    plan::CollectiveOp op = plan::CollectiveOp::all_reduce) {
  plan::Task t;
  t.id = id;
  t.kind = plan::TaskKind::collective;
  t.op = op;
  for (const std::string& g : gpus) t.devices.push_back(plan::device_index(p, g));
  t.size = bytes;
  p.tasks.push_back(std::move(t));
}

// Memory per GPU of stage 0 (stages are alike): its training state and its
// stored activations per sequence.
void stage_memory(const model::Model& m, SliceCostModel& c) {
  const double elem = static_cast<double>(plan::dtype_size(m.dtype));
  int seen = 0;
  for (const auto& l : m.layers) {
    if (!l.transformer || seen++ >= c.layers_per_stage) continue;
    c.state_bytes += l.param_bytes / elem / c.tp * model::kTrainingBytesPerParam;
    c.activation_bytes += model::activation_bytes(m, l, {.tp = c.tp});
  }
}

}  // namespace

SliceCostModel slice_cost_model(const model::Model& m, const topology::Topology& topo, int pp, int tp,
                                int first_gpu, int dp) {
  if (m.hidden <= 0 || m.sequence <= 0)
    throw UsageError(
        fmt::format("TeraPipe needs a GPT model (hidden size and sequence); {} is a layer list", m.name));
  if (tp >= 1) model::check_tensor_parallel(m, tp);
  int transformer = 0;
  for (const auto& l : m.layers) transformer += l.transformer ? 1 : 0;
  if (pp < 1 || tp < 1 || dp < 1 || transformer % pp != 0)
    throw UsageError(
        fmt::format("{} transformer layers do not split evenly into {} stages", transformer, pp));
  const auto& gpus = topo.gpus();
  const std::int64_t need = static_cast<std::int64_t>(pp) * dp * tp;
  if (first_gpu < 0 || first_gpu + need > static_cast<std::int64_t>(gpus.size()))
    throw UsageError(fmt::format("dp {} x pp {} x op {} = {} GPUs, but {} has {} from GPU {}", dp, pp, tp,
                                 need, topo.name, gpus.size(), first_gpu));
  // GPU of (stage p, replica r, tensor rank t): tensor ranks consecutive,
  // then stages, replicas outermost, as TeraPipe's code groups ranks
  // (data-parallel groups take every (pp·tp)-th rank), so a stage's
  // replicas sit on different hosts and their gradient all-reduce crosses
  // the network.
  auto name = [&](int p, int r, int t) {
    return topo.node(gpus[static_cast<std::size_t>(first_gpu + (r * pp + p) * tp + t)]).name;
  };
  auto group = [&](int p, int r) {
    std::vector<std::string> g;
    for (int t = 0; t < tp; ++t) g.push_back(name(p, r, t));
    return g;
  };
  SliceCostModel c;
  c.layers_per_stage = transformer / pp;
  c.tp = tp;
  c.dp = dp;
  if (tp > 1) {
    c.tp_allreduce = fit(topo, [&](plan::Plan& fp, Bytes b) {
      for (int r = 0; r < dp; ++r) add_collective(fp, fmt::format("tp-allreduce/r{}", r), group(0, r), b);
    });
    // NCCL broadcasts on its rings, every link carrying the buffer once: the
    // wire of an all-gather whose output is tp / (tp − 1) times the buffer.
    c.tp_broadcast = fit(topo, [&](plan::Plan& fp, Bytes b) {
      const Bytes gathered(b.count() * tp / (tp - 1));
      for (int r = 0; r < dp; ++r)
        add_collective(fp, fmt::format("tp-broadcast/r{}", r), group(0, r), gathered,
                       plan::CollectiveOp::all_gather);
    });
  }
  // The slowest stage boundary sets the pace; every replica sends at once.
  for (int p = 0; p + 1 < pp; ++p) {
    const AlphaBeta ab = fit(topo, [&](plan::Plan& fp, Bytes b) {
      for (int r = 0; r < dp; ++r) {
        plan::Task t;
        t.id = fmt::format("stage-send/r{}", r);
        t.kind = plan::TaskKind::send;
        t.devices = {plan::device_index(fp, name(p, r, 0)), plan::device_index(fp, name(p + 1, r, 0))};
        t.size = b;
        fp.tasks.push_back(std::move(t));
      }
    });
    if (ab.time(64e6) > c.stage_send.time(64e6)) c.stage_send = ab;
  }
  stage_memory(m, c);
  if (dp > 1) {
    // Every (stage, tensor rank) reduces its share of the stage's gradients over the replicas.
    const Bytes share(static_cast<std::int64_t>(c.state_bytes / model::kTrainingBytesPerParam *
                                                static_cast<double>(plan::dtype_size(m.dtype))));
    plan::Plan ar;
    ar.name = "terapipe-gradients";
    for (int p = 0; p < pp; ++p)
      for (int t = 0; t < tp; ++t) {
        std::vector<std::string> g;
        for (int r = 0; r < dp; ++r) g.push_back(name(p, r, t));
        add_collective(ar, fmt::format("grad/s{}/t{}", p, t), g, share);
      }
    c.grad_allreduce_s = sim::simulate(ar, topo).makespan.seconds();
  }
  return c;
}

double terapipe_update_time(const model::Model& m, const SliceCostModel& c, const sim::DeviceModel& dev) {
  const double bytes_per_param = m.dtype == plan::DType::f16 || m.dtype == plan::DType::bf16 ? 48 : 28;
  const double params = c.state_bytes / model::kTrainingBytesPerParam;  // on one GPU
  return dev
      .kernel_time(0, checked_bytes(params * bytes_per_param, "the optimizer step's traffic"),
                   plan::DType::f32)
      .seconds();
}

int max_microbatch_size(const SliceCostModel& c, double capacity) {
  if (c.activation_bytes <= 0) return std::numeric_limits<int>::max();
  const double room = (capacity - c.state_bytes) / c.activation_bytes;
  return room < 1 ? 0 : static_cast<int>(std::min(room, 1e9));
}

namespace {
// Times kernel lists, each single-product GEMM shape (the weight GEMMs,
// which depend on a slice's token count only) once; the attention's batched
// products change with the context and are timed each time.
class SliceKernelTimer {
 public:
  explicit SliceKernelTimer(sim::DeviceModel d) : dev_(std::move(d)) {}
  double seconds(const plan::KernelList& k) {
    Time t;
    for (const auto& g : k.gemms) {
      if (g.batch != 1) {
        t += dev_.gemm_time(g.m, g.n, g.k, k.dtype, g.batch);
        continue;
      }
      const std::array<double, 3> key{g.m, g.n, g.k};
      auto it = single_.find(key);
      if (it == single_.end()) it = single_.emplace(key, dev_.gemm_time(g.m, g.n, g.k, k.dtype)).first;
      t += it->second;
    }
    for (Bytes bytes : k.memory_bytes) t += dev_.kernel_time(0, bytes, k.dtype);
    return t.seconds();
  }

 private:
  sim::DeviceModel dev_;
  std::map<std::array<double, 3>, Time> single_;
};
}  // namespace

SliceCostFn slice_cost(const model::Model& m, const SliceCostModel& c, const sim::DeviceModel& dev) {
  const auto h = static_cast<double>(m.hidden);
  const auto e = static_cast<double>(plan::dtype_size(m.dtype));
  const model::LayerShape shape{h, static_cast<double>(m.heads), 1, 0, 0, static_cast<double>(c.tp), m.dtype};
  const double accumulate = dev.kernels_time(model::gpt_layer_grad_accumulation(shape)).seconds();
  auto timer = std::make_shared<SliceKernelTimer>(dev);  // shared by the function's copies
  return [=](int len, int ctx, int b) {
    model::LayerShape s = shape;
    s.sequences = b;
    s.tokens = len;
    s.context = ctx;
    const double bl = b * static_cast<double>(len);
    const plan::KernelList forward = model::layer_forward(s);
    const plan::KernelList backward = model::layer_backward(forward);
    const plan::KernelList cache = model::kv_cache_kernels(s, static_cast<double>(m.sequence));
    const plan::KernelList attention = model::terapipe_attention_kernels(s);
    const double gpu = timer->seconds(forward) + timer->seconds(backward) + accumulate +
                       timer->seconds(cache) + timer->seconds(attention) +
                       (c.tp > 1 ? 4 * c.tp_allreduce.time(bl * h * e) : 0.0);
    double calls = 1 + (c.tp > 1 ? 4 : 0);  // the accumulation; the all-reduces
    for (const auto* k : {&forward, &backward, &cache, &attention})
      calls += static_cast<double>(k->launches());
    const double layer = std::max(gpu, calls * c.host_per_kernel);
    const double spread = c.tp > 1 ? 2 * c.tp_broadcast.time(bl * h * e) : 0.0;  // activation and gradient
    return c.layers_per_stage * layer + spread +
           2 * (c.stage_send.beta > 0 ? c.stage_send.time(bl * h * e) : 0.0);
  };
}

}  // namespace meshsim::pipeline
