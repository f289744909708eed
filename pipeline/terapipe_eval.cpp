#include "pipeline/terapipe_eval.h"

#include <chrono>

#include <fmt/format.h>

#include "core/error.h"
#include "model/layer_kernels.h"
#include "sim/compute_model.h"

namespace meshsim::pipeline {

TeraPipeOutcome evaluate_terapipe(const model::Model& model, const topology::Topology& topo,
                                  const sim::SimOptions& opts, const TeraPipeShape& sh,
                                  const CapProgress& progress) {
  const sim::DeviceModel* dm = sim::find_device_model(topo.node(topo.gpus().at(0)).model, opts.device_models);
  if (!dm) throw UsageError(fmt::format("{}'s GPUs have no compute model", topo.name));
  if (sh.batch % sh.dp != 0)
    throw UsageError(
        fmt::format("a batch of {} does not split over {} data-parallel replicas", sh.batch, sh.dp));
  const int batch = sh.batch / sh.dp;  // per replica
  TeraPipeOutcome o;
  o.cost_model = slice_cost_model(model, topo, sh.pp, sh.op, 0, sh.dp);
  o.cost_model.host_per_kernel = sh.host_per_kernel;
  o.capacity = static_cast<double>(dm->memory_capacity.count());
  if (sh.memory_limit) {
    o.max_microbatch = max_microbatch_size(o.cost_model, o.capacity);
    const auto kGiB = static_cast<double>(Bytes::GiB(1).count());
    if (o.max_microbatch < 1)
      throw UsageError(fmt::format(
          "one sequence does not fit in a {:.0f} GiB GPU: {:.1f} GiB of weights, gradients and optimizer "
          "state "
          "and {:.1f} GiB of activations per sequence per GPU (more stages or tensor parallelism would split "
          "them; --no-memory-limit ignores the limit)",
          o.capacity / kGiB, o.cost_model.state_bytes / kGiB, o.cost_model.activation_bytes / kGiB));
  }
  const auto seq = static_cast<int>(model.sequence);
  check_terapipe_dp(seq, batch, sh.pp, sh.granularity, o.max_microbatch);  // before any slice is costed
  o.cost_model.update_s = terapipe_update_time(model, o.cost_model, *dm);
  const auto cost = slice_cost(model, o.cost_model, *dm);
  o.none = uniform_slicing(seq, batch, sh.pp, cost, 1, sh.granularity, o.max_microbatch);
  o.uniform =
      uniform_slicing(seq, batch, sh.pp, cost, seq / sh.granularity, sh.granularity, o.max_microbatch);
  o.uniform_single = uniform_slicing(seq, batch, sh.pp, cost, seq / sh.granularity, sh.granularity, 1);
  if (sh.uniform_slices > 0)
    o.fixed = fixed_uniform_slicing(seq, batch, sh.pp, cost, sh.uniform_slices, sh.granularity);
  const auto t0 = std::chrono::steady_clock::now();
  o.dp = terapipe_dp(seq, batch, sh.pp, cost, sh.granularity, o.max_microbatch, progress);
  o.dp_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

namespace {
// Li et al., "TeraPipe", ICML 2021: Table 1 (settings) and Fig. 5
// (iteration times, seconds) on p3.16xlarge hosts. (2), (3), (4) and (7)
// are not among the times we hold.
constexpr TeraPipePaperSetting kPaper[] = {
    {"(1)", "gpt3-1b", 192, 128, 8, 24, 1, 1.517, 1.254},
    {"(5)", "gpt3-13b", 320, 32, 1, 40, 8, 1.863, 1.328},
    {"(6)", "gpt3-44b", 384, 8, 4, 96, 1, 13.319, 7.103},
    {"(8)", "gpt3-44b", 384, 8, 1, 48, 8, 2.662, 1.111},
    {"(9)", "gpt3-175b", 384, 2, 1, 96, 4, 9.990, 1.481, 1.04},
    {"(10)", "gpt3-175b", 384, 2, 1, 48, 8, 5.822, 1.160},
};
// The same paper's ablation of the slice count (175B, uniform slices,
// microbatches of one sequence): too many slices hurts. The paper does not
// name the setting. It gives the DP's gain over the best uniform slicing for
// the 175B as 1.04x, and 16 slices as 1.547 s; if 16 slices was the best
// uniform slicing (the ablation's best of the counts it shows), the DP took
// 1.547 / 1.04 = 1.487 s: setting (9)'s measured time with slicing (1.481 s),
// not (10)'s (1.160 s). So both are placed on (9). (The paper's 1.12x for
// the 44B names no setting we can pin down: not held.)
constexpr TeraPipeAblationPoint kAblation[] = {{"(9)", 16, 1.547}, {"(9)", 128, 3.252}};
}  // namespace

std::span<const TeraPipeAblationPoint> terapipe_ablation() {
  return kAblation;
}

std::span<const TeraPipePaperSetting> terapipe_paper_settings() {
  return kPaper;
}

const TeraPipePaperSetting* find_terapipe_paper_setting(std::string_view id) {
  for (const auto& s : kPaper)
    if (s.id == id) return &s;
  return nullptr;
}

double terapipe_paper_host_per_kernel() {
  // Li et al. (ICML 2021), Fig. 3: GPT-3 1B (hidden 2048, 16 heads, fp16),
  // one layer's forward pass on one GPU of the paper's cluster, flat at 1.45 ms up to 256 tokens.
  constexpr double kFlatForward = 1.45e-3;
  const model::LayerShape layer{2048, 16, 1, 256, 0, 1, plan::DType::f16};
  return kFlatForward / model::terapipe_forward_kernel_count(layer);
}

TeraPipeShape paper_shape(const TeraPipePaperSetting& s) {
  TeraPipeShape sh;
  sh.host_per_kernel = terapipe_paper_host_per_kernel();
  sh.pp = s.pp;
  sh.op = s.op;
  sh.dp = s.dp;
  sh.batch = s.batch;
  return sh;
}

}  // namespace meshsim::pipeline
