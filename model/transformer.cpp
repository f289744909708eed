#include "model/transformer.h"

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::model {

double TransformerSpec::kv_width() const {
  return static_cast<double>(kv_heads) * static_cast<double>(hidden / heads);
}

bool TransformerSpec::is_moe_layer(std::int64_t layer) const {
  return moe.has_value() && layer % moe->layer_frequency == 0;
}

double TransformerSpec::mlp_params(double ffn) const {
  const auto h = static_cast<double>(hidden);
  return mlp_gemms() * h * ffn + (biases() ? ffn + h : 0);
}

double layer_params(const TransformerSpec& t, std::int64_t layer) {
  const auto h = static_cast<double>(t.hidden);
  const double kv = t.kv_width();
  double p = h * (h + 2 * kv) + h * h + 2 * t.norm_params();
  if (t.biases()) p += h + 2 * kv + h;
  if (!t.is_moe_layer(layer)) return p + t.mlp_params(static_cast<double>(t.ffn_hidden));
  const MoeSpec& e = *t.moe;
  const double shared_ffn = static_cast<double>(e.shared_ffn > 0 ? e.shared_ffn : e.expert_ffn);
  return p + h * static_cast<double>(e.experts) +
         static_cast<double>(e.experts) * t.mlp_params(static_cast<double>(e.expert_ffn)) +
         static_cast<double>(e.shared_experts) * t.mlp_params(shared_ffn);
}

double layer_forward_flops(const TransformerSpec& t, std::int64_t layer) {
  const auto h = static_cast<double>(t.hidden);
  const auto s = static_cast<double>(t.sequence);
  const double attention = 2 * s * h * (h + 2 * t.kv_width()) + 2 * s * h * h + 4 * s * s * h;
  const double per_mlp_ffn = 2 * s * h * t.mlp_gemms();  // × the MLP's hidden size
  if (!t.is_moe_layer(layer)) return attention + per_mlp_ffn * static_cast<double>(t.ffn_hidden);
  const MoeSpec& e = *t.moe;
  const double shared_ffn = static_cast<double>(e.shared_ffn > 0 ? e.shared_ffn : e.expert_ffn);
  return attention + 2 * s * h * static_cast<double>(e.experts) +
         per_mlp_ffn * (static_cast<double>(e.top_k * e.expert_ffn) +
                        static_cast<double>(e.shared_experts) * shared_ffn);
}

std::string describe(const TransformerSpec& t) {
  std::string out = fmt::format("{}: {} layers, hidden {}, {} heads",
                                t.family == Family::gpt ? "GPT" : "Llama", t.layers, t.hidden, t.heads);
  if (t.kv_heads != t.heads) out += fmt::format(" ({} key/value)", t.kv_heads);
  if (t.ffn_hidden != 4 * t.hidden || t.family != Family::gpt) out += fmt::format(", MLP {}", t.ffn_hidden);
  if (t.moe)
    out += fmt::format(", {} experts of {} (top {}{})", t.moe->experts, t.moe->expert_ffn, t.moe->top_k,
                       t.moe->shared_experts > 0 ? fmt::format(", {} shared", t.moe->shared_experts) : "");
  return out + fmt::format(", sequence {}, vocabulary {}", t.sequence, t.vocabulary);
}

void check_spec(const TransformerSpec& t) {
  if (t.layers < 1 || t.hidden < 1 || t.heads < 1 || t.kv_heads < 1 || t.ffn_hidden < 1 || t.sequence < 1 ||
      t.vocabulary < 1)
    throw UsageError(
        "a transformer needs positive layers, hidden, heads, kv_heads, ffn_hidden, sequence and vocabulary");
  if (t.hidden % t.heads != 0)
    throw UsageError(fmt::format("hidden size {} is not divisible by {} heads", t.hidden, t.heads));
  if (t.heads % t.kv_heads != 0)
    throw UsageError(
        fmt::format("{} attention heads do not group evenly over {} key/value heads", t.heads, t.kv_heads));
  if (!t.moe) return;
  const MoeSpec& e = *t.moe;
  if (e.experts < 1 || e.expert_ffn < 1 || e.layer_frequency < 1 || e.shared_experts < 0 || e.shared_ffn < 0)
    throw UsageError("an MoE block needs at least one expert, a positive expert_ffn and layer_frequency");
  if (e.top_k < 1 || e.top_k > e.experts)
    throw UsageError(fmt::format("top_k {} must be between 1 and the {} experts", e.top_k, e.experts));
  if (!(e.capacity_factor == 0 || e.capacity_factor >= 1))
    throw UsageError("a capacity factor is 0 (dropless) or at least 1");
}

namespace {

MoeSpec moe_from_json(const JsonCursor& c) {
  c.allow_only({"experts", "top_k", "expert_ffn", "shared_experts", "shared_ffn", "layer_frequency",
                "capacity_factor"});
  MoeSpec e;
  e.experts = c["experts"].as_int_in(1, 1 << 16);
  e.top_k = c["top_k"].as_int_in(1, e.experts);
  e.expert_ffn = c["expert_ffn"].as_int_in(1, INT64_C(1) << 20);
  if (auto s = c.find("shared_experts")) e.shared_experts = s->as_int_in(0, 64);
  if (auto s = c.find("shared_ffn")) e.shared_ffn = s->as_int_in(1, INT64_C(1) << 20);
  if (auto f = c.find("layer_frequency")) e.layer_frequency = f->as_int_in(1, 1 << 16);
  if (auto cf = c.find("capacity_factor")) {
    e.capacity_factor = cf->as_number();
    if (!(e.capacity_factor == 0 || (e.capacity_factor >= 1 && e.capacity_factor <= 1024)))
      cf->fail("a capacity factor is 0 (dropless) or between 1 and 1024");
  }
  return e;
}

}  // namespace

TransformerSpec transformer_spec_from_json(const JsonCursor& root, Family family) {
  TransformerSpec t;
  t.family = family;
  t.layers = root["layers"].as_int_in(1, 100000);
  t.hidden = root["hidden"].as_int_in(1, INT64_C(1) << 20);
  t.heads = root["heads"].as_int_in(1, 1 << 16);
  if (t.hidden % t.heads != 0)
    root["heads"].fail(fmt::format("hidden size {} is not divisible by {}", t.hidden, t.heads));
  t.kv_heads = root.has("kv_heads") ? root["kv_heads"].as_int_in(1, t.heads) : t.heads;
  if (t.heads % t.kv_heads != 0)
    root["kv_heads"].fail(fmt::format("{} heads do not group evenly over {}", t.heads, t.kv_heads));
  if (family == Family::llama)
    t.ffn_hidden = root["ffn_hidden"].as_int_in(1, INT64_C(1) << 20);
  else
    t.ffn_hidden = root.has("ffn_hidden") ? root["ffn_hidden"].as_int_in(1, INT64_C(1) << 20) : 4 * t.hidden;
  t.sequence = root["sequence"].as_int_in(1, INT64_C(1) << 24);
  t.vocabulary = root["vocabulary"].as_int_in(1, INT64_C(1) << 24);
  if (auto m = root.find("moe")) t.moe = moe_from_json(*m);
  return t;
}

}  // namespace meshsim::model
