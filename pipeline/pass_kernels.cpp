#include "pipeline/pass_kernels.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"
#include "model/layer_kernels.h"

namespace meshsim::pipeline {

namespace {

// The GEMMs of layer_forward that multiply by weights (QKV, output
// projection, the MLP's or the router's and experts'); the others are the
// attention products, which fused attention holds in a kernel of its own.
bool weight_gemm(std::size_t i, bool fused_attention) {
  return fused_attention || i == 0 || i >= 3;
}

void append(plan::KernelList& to, const plan::KernelList& from) {
  to.gemms.insert(to.gemms.end(), from.gemms.begin(), from.gemms.end());
  to.attention.insert(to.attention.end(), from.attention.begin(), from.attention.end());
  to.memory_bytes.insert(to.memory_bytes.end(), from.memory_bytes.begin(), from.memory_bytes.end());
}

// A transformer layer's kernels in `pass`.
void transformer(plan::KernelList& out, const model::Model& m, const model::LayerCost& l, Pass pass,
                 const PassOptions& o) {
  model::LayerShape shape = model::whole_sequences(m, o.microbatch_size, o.tp, l.moe, o.ep, o.expert_skew);
  shape.fused_attention = o.fused_attention;
  shape = model::context_shard(shape, o.cp);
  plan::KernelList forward = model::layer_forward(shape);
  for (std::size_t i = 0; i < forward.gemms.size(); ++i)
    forward.gemms[i].fp8 = o.fp8 && weight_gemm(i, o.fused_attention);
  if (pass == Pass::forward) return append(out, forward);
  if (pass == Pass::backward && o.recompute == model::Recompute::full) append(out, forward);
  // Selective: the scores and softmax again (fused attention's backward recomputes them itself).
  if (pass == Pass::backward && !o.fused_attention && o.recompute == model::Recompute::selective) {
    out.gemms.insert(out.gemms.end(), forward.gemms.begin() + 1, forward.gemms.begin() + 3);
    out.memory_bytes.push_back(forward.memory_bytes[1]);
  }
  const plan::KernelList backward = model::layer_backward(forward);
  if (!o.split_backward) return append(out, backward);
  // backward.gemms holds, per forward GEMM i, its input gradient (2i) and
  // its weight or second operand's gradient (2i + 1).
  for (std::size_t i = 0; i < backward.gemms.size(); ++i) {
    const bool weight = i % 2 == 1 && weight_gemm(i / 2, o.fused_attention);
    if (weight == (pass == Pass::weight)) out.gemms.push_back(backward.gemms[i]);
  }
  if (pass == Pass::backward) {
    out.attention.insert(out.attention.end(), backward.attention.begin(), backward.attention.end());
    out.memory_bytes.insert(out.memory_bytes.end(), backward.memory_bytes.begin(),
                            backward.memory_bytes.end());
  }
}

// Any other layer: a GEMM to its output width when it has FLOPs, else a
// memory-bound pass over its output.
void other(plan::KernelList& out, const model::LayerCost& l, const model::Model& m, Pass pass, int b, int tp,
           int cp, bool split, bool recompute) {
  if (l.output_shape.empty()) return;
  const double width = static_cast<double>(l.output_shape.back());
  const double rows = std::accumulate(l.output_shape.begin(), l.output_shape.end() - 1, 1.0,
                                      [](double a, std::int64_t d) { return a * static_cast<double>(d); });
  if (l.forward_flops > 0) {
    const double k = l.forward_flops / (2 * rows * width);
    const plan::KernelList::Gemm g{b * rows / cp, width / tp, k, 1};
    if (pass == Pass::forward || (pass == Pass::backward && recompute)) out.gemms.push_back(g);
    if (pass == Pass::backward) out.gemms.push_back({g.m, g.k, g.n, 1});  // input gradient
    if (pass == Pass::weight || (pass == Pass::backward && !split))
      out.gemms.push_back({g.k, g.n, g.m, 1});  // weight gradient
    return;
  }
  if (pass == Pass::weight) return;
  const double bytes = 2.0 * b * rows / cp * width * static_cast<double>(plan::dtype_size(m.dtype));
  if (pass == Pass::backward && recompute)
    out.memory_bytes.push_back(checked_bytes(bytes, "a pass's activation traffic"));
  out.memory_bytes.push_back(
      checked_bytes(pass == Pass::forward ? bytes : 2 * bytes, "a pass's activation traffic"));
}

// A layer with a kernel list: its GEMMs for a microbatch of b at degree tp
// (n split over the ranks, or by batch the microbatch), its memory-bound
// kernels (÷ tp).
void listed(plan::KernelList& out, const model::LayerKernels& k, Pass pass, int b, int tp,
            model::LayerSplit by, bool split, bool recompute) {
  const bool forward = pass == Pass::forward || (pass == Pass::backward && recompute);
  const double rows = by == model::LayerSplit::batch ? static_cast<double>(b) / tp : b;
  const double cols = by == model::LayerSplit::batch ? 1 : tp;
  for (const model::LayerGemm& lg : k.gemms) {
    const plan::KernelList::Gemm g{lg.shape.m * (lg.batch_grows ? 1 : rows), lg.shape.n / cols, lg.shape.k,
                                   lg.shape.batch * (lg.batch_grows ? rows : 1)};
    if (forward) out.gemms.push_back(g);
    if (pass == Pass::backward) out.gemms.push_back({g.m, g.k, g.n, g.batch});  // input gradient
    const bool in_w = split && lg.weights;  // the second operand's gradient
    if ((pass == Pass::weight && in_w) || (pass == Pass::backward && !in_w))
      out.gemms.push_back({g.k, g.n, g.m, g.batch});
  }
  if (pass == Pass::weight) return;
  for (double bytes : k.memory_bytes) {
    const double moved = b * bytes / tp;
    if (forward) out.memory_bytes.push_back(checked_bytes(moved, "a layer's memory-bound kernels"));
    if (pass == Pass::backward)
      out.memory_bytes.push_back(checked_bytes(2 * moved, "a layer's memory-bound kernels"));
  }
}

}  // namespace

PassOptions pass_options(const model::ParallelConfig& cfg) {
  return {cfg.microbatch_size, cfg.tp, cfg.schedule == model::Schedule::zb_h1,
          cfg.recompute,       cfg.ep, cfg.expert_skew,
          cfg.flash_attention, cfg.cp, cfg.fp8,
          cfg.host_per_kernel};
}

std::optional<plan::KernelList> pass_kernels(const model::Model& m, const VirtualStage& vs, Pass pass,
                                             const PassOptions& o) {
  const int microbatch_size = o.microbatch_size;
  const int tp = o.tp;
  const bool split_backward = o.split_backward;
  const bool full = o.recompute == model::Recompute::full;
  if (!model::has_kernel_lists(m)) return std::nullopt;
  plan::KernelList out;
  out.dtype = m.dtype;
  for (int i = vs.first_layer; i < vs.end_layer; ++i) {
    const model::LayerCost& l = m.layers[static_cast<std::size_t>(i)];
    const std::size_t in_stage = static_cast<std::size_t>(i - vs.first_layer);
    const model::LayerSplit by =
        in_stage < vs.splits.size() ? vs.splits[in_stage] : model::LayerSplit::channels;
    if (l.kernels)
      listed(out, *l.kernels, pass, microbatch_size, tp, by, split_backward, full);
    else if (l.transformer)
      transformer(out, m, l, pass, o);
    else
      other(out, l, m, pass, microbatch_size, tp, o.cp, split_backward, full);
  }
  if (out.launches() == 0) return std::nullopt;  // nothing to list: the roofline's
  out.host_per_kernel = o.host_per_kernel;
  return out;
}

std::vector<plan::KernelList> calibration_kernel_lists(const model::Model& m, const std::vector<int>& tps,
                                                       const std::vector<int>& microbatch_sizes) {
  if (m.hidden > 0) return model::gpt_layer_kernel_lists(m, tps, microbatch_sizes);
  if (!model::layers_list_kernels(m))
    throw UsageError(fmt::format(
        "model {} is neither a GPT model nor a layer list with kernels: no GEMMs to time", m.name));
  for (int t : tps) {
    for (int b : microbatch_sizes)
      if (t < 1 || b < 1)
        throw UsageError(fmt::format(
            "a tensor-parallel degree and a microbatch size are at least 1, got {} and {}", t, b));
    for (const model::LayerCost& l : m.layers) {  // a channel split needs whole columns on every rank
      if (!l.kernels) continue;
      for (const model::LayerGemm& g : l.kernels->gemms)
        if (std::fmod(g.shape.n, t) != 0)
          throw UsageError(
              fmt::format("{}'s layer {} has a GEMM of {} columns, which do not split over {} tensor ranks",
                          m.name, l.name, g.shape.n, t));
    }
  }
  VirtualStage whole;
  whole.end_layer = static_cast<int>(m.layers.size());
  std::vector<plan::KernelList> out;
  for (int t : tps)
    for (int b : microbatch_sizes) {
      for (model::LayerSplit by : {model::LayerSplit::channels, model::LayerSplit::batch}) {
        if (by == model::LayerSplit::batch && (t == 1 || b % t != 0)) continue;
        whole.splits.assign(m.layers.size(), by);
        for (Pass pass : {Pass::forward, Pass::backward})
          if (auto k = pass_kernels(m, whole, pass, {b, t, false, model::Recompute::none}))
            out.push_back(std::move(*k));
      }
    }
  return out;
}

}  // namespace meshsim::pipeline
