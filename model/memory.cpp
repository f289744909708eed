#include "model/memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::model {

StatePrecision state_precision(double element_bytes) {
  const double moments = 2 * std::max(4.0, element_bytes);
  return {element_bytes, element_bytes, moments + (element_bytes < 4 ? 4 : 0)};
}

double state_bytes_per_param(const StatePrecision& p, ZeroStage zero, int dp) {
  if (dp < 1) throw UsageError(fmt::format("the data-parallel degree must be at least 1, got {}", dp));
  const double d = dp;
  auto sharded = [&](double bytes, ZeroStage from) { return zero >= from ? bytes / d : bytes; };
  return sharded(p.weights, ZeroStage::parameters) + sharded(p.gradients, ZeroStage::gradients) +
         sharded(p.optimizer, ZeroStage::optimizer);
}

namespace {

// R, P and S of memory.h for one layer, per sequence, before any division.
struct LayerParts {
  double replicated = 0;
  double split = 0;
  double scores = 0;
};

LayerParts mlp_parts(const TransformerSpec& t, double ffn, double rows, double e) {
  return {0, rows * ffn * e * (t.gated_mlp() ? 3 : 2), 0};
}

LayerParts layer_parts(const TransformerSpec& t, bool moe_layer, double e, bool flash) {
  const auto s = static_cast<double>(t.sequence);
  const auto h = static_cast<double>(t.hidden);
  const auto a = static_cast<double>(t.heads);
  LayerParts p;
  p.replicated = 2 * s * h * e + 2 * s * h * e + (t.dropout() ? 2 * s * h : 0);
  p.split = s * h * e + 2 * s * t.kv_width() * e + s * h * e;
  if (flash)
    p.scores = a * s * 4;
  else
    p.scores = a * s * s * e + (t.dropout() ? a * s * s + a * s * s * e : 0);
  if (!moe_layer) {
    p.split += mlp_parts(t, static_cast<double>(t.ffn_hidden), s, e).split;
    return p;
  }
  const MoeSpec& m = *t.moe;
  const double routed = s * static_cast<double>(m.top_k);
  const double shared_ffn = static_cast<double>(m.shared_ffn > 0 ? m.shared_ffn : m.expert_ffn);
  p.replicated += routed * h * e + s * static_cast<double>(m.experts) * 4;
  p.split += mlp_parts(t, static_cast<double>(m.expert_ffn), routed, e).split +
             static_cast<double>(m.shared_experts) * mlp_parts(t, shared_ffn, s, e).split;
  return p;
}

}  // namespace

double layer_activation_bytes(const TransformerSpec& t, bool moe_layer, double element_bytes,
                              const ActivationOptions& o) {
  if (o.tp < 1) throw UsageError(fmt::format("the tensor-parallel degree must be at least 1, got {}", o.tp));
  if (o.cp < 1) throw UsageError(fmt::format("the context-parallel degree must be at least 1, got {}", o.cp));
  const double tp = o.tp;
  const double whole = o.sequence_parallel ? tp : 1;  // what divides R
  if (o.recompute == Recompute::full)
    return static_cast<double>(t.sequence) * static_cast<double>(t.hidden) * element_bytes / whole / o.cp;
  const LayerParts p = layer_parts(t, moe_layer, element_bytes, o.flash_attention);
  const double scores = o.recompute == Recompute::selective ? 0 : p.scores / tp;
  return (p.replicated / whole + p.split / tp + scores) / o.cp;
}

}  // namespace meshsim::model
