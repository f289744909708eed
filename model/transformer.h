#pragma once
// The architecture of a decoder-only transformer, the one description the
// model families share (`meshsim.model/1`, kinds "gpt" and "llama"; either
// may add a "moe" block). Symbols: h hidden, a heads, g key/value heads
// (grouped-query attention; g = a is multi-head), d = h/a head size, f the
// MLP's hidden size, s sequence, V vocabulary.
//
//   family  GPT (Brown et al. 2020; Megatron-LM's GPT)   Llama (Touvron et al.
//                                                         2023; Meta's Llama 3)
//   MLP     GeLU, two GEMMs h→f→h, f = 4h, with biases    SwiGLU, three GEMMs
//                                                         (gate and up h→f,
//                                                         down f→h), no biases
//   norm    LayerNorm (weight and bias)                   RMSNorm (weight)
//   pos.    learned, s·h parameters                       rotary (none)
//   output  tied to the embedding                         its own V·h weights
//   dropout on (masks stored for the backward)            off
//
// Parameters of one layer:
//   attention  h·(h + 2·g·d) (Q, K, V) + h·h (output), plus biases h + 2·g·d
//              + h (GPT)
//   MLP        2·h·f (+ f + h biases) GeLU; 3·h·f SwiGLU
//   norms      2 per layer: 2·2h (LayerNorm) or 2·h (RMSNorm)
// GPT's layer comes to 12h² + 13h, Megatron's count.
//
// Forward FLOPs of one layer per sequence (2 per multiply-add; Narayanan et
// al., SC'21, counted the same way):
//   attention  2·s·h·(h + 2·g·d) + 2·s·h² (projections) + 4·s²·h (scores
//              and values: every query head attends to every position)
//   MLP        2·s·h·f·(2 GeLU | 3 SwiGLU)
// GPT's layer: 24·s·h² + 4·s²·h.
//
// Mixture of experts (Shazeer et al. 2017; GShard; Switch; Mixtral, Jiang et
// al. 2024; Megatron-Core's MoE): an MoE layer replaces the MLP with a router
// (a GEMM h → E, no bias) and E experts, each an MLP of hidden size f_e of
// the family's kind; each token goes to its top k experts, so an expert
// sees s·k/E tokens per sequence under uniform routing. `shared_experts`
// MLPs of hidden size f_s see every token (DeepSeek-MoE, Qwen-MoE). Layer i
// is an MoE layer when i mod `layer_frequency` = 0 (Megatron-Core's
// moe_layer_freq). `capacity_factor`: each expert takes at most
// capacity_factor · s·k/E tokens per sequence (the rest are dropped); 0 for
// dropless routing (Megatron-Core's default). Per MoE layer:
//   parameters  h·E + E·MLP(f_e) + shared·MLP(f_s)
//   FLOPs       2·s·h·E + k·2·s·h·f_e·(2|3) + shared·2·s·h·f_s·(2|3)
// (the attention part as a dense layer's).

#include <cstdint>
#include <optional>
#include <string>

#include "core/enum_names.h"
#include "core/json.h"

namespace meshsim::model {

enum class Family : std::uint8_t { gpt, llama };
inline constexpr EnumNames<Family, 2> kFamilyNames{"model family",
                                                   {{{Family::gpt, "gpt"}, {Family::llama, "llama"}}}};

struct MoeSpec {
  std::int64_t experts = 0;
  std::int64_t top_k = 1;
  std::int64_t expert_ffn = 0;      // f_e
  std::int64_t shared_experts = 0;  // MLPs every token goes through
  std::int64_t shared_ffn = 0;      // f_s (0: f_e)
  std::int64_t layer_frequency = 1;
  double capacity_factor = 0;  // 0: dropless
  friend bool operator==(const MoeSpec&, const MoeSpec&) = default;
};

struct TransformerSpec {
  Family family = Family::gpt;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // g
  std::int64_t ffn_hidden = 0;
  std::int64_t sequence = 0;
  std::int64_t vocabulary = 0;
  std::optional<MoeSpec> moe;

  // What the family fixes (table above).
  [[nodiscard]] bool gated_mlp() const { return family == Family::llama; }
  [[nodiscard]] bool biases() const { return family == Family::gpt; }
  [[nodiscard]] bool dropout() const { return family == Family::gpt; }
  [[nodiscard]] bool learned_positions() const { return family == Family::gpt; }
  [[nodiscard]] bool tied_embeddings() const { return family == Family::gpt; }
  /// Parameters of one norm: LayerNorm's weight and bias, RMSNorm's weight.
  [[nodiscard]] double norm_params() const {
    return (family == Family::gpt ? 2.0 : 1.0) * static_cast<double>(hidden);
  }
  /// Width of the keys and of the values: g·d.
  [[nodiscard]] double kv_width() const;
  [[nodiscard]] bool is_moe_layer(std::int64_t layer) const;
  /// GEMMs of one MLP with hidden size `ffn`: 2 (GeLU) or 3 (SwiGLU).
  [[nodiscard]] double mlp_gemms() const { return gated_mlp() ? 3 : 2; }
  [[nodiscard]] double mlp_params(double ffn) const;
  friend bool operator==(const TransformerSpec&, const TransformerSpec&) = default;
};

/// Parameters of transformer layer `layer` (dense or MoE, as the spec says).
[[nodiscard]] double layer_params(const TransformerSpec& t, std::int64_t layer);
/// Forward FLOPs of transformer layer `layer` per sequence.
[[nodiscard]] double layer_forward_flops(const TransformerSpec& t, std::int64_t layer);

/// One line naming the family and its sizes ("GPT: 96 layers, hidden 12288, ...").
[[nodiscard]] std::string describe(const TransformerSpec& t);

/// A spec's sizes checked: positive, h divisible by a, a by g, and the MoE
/// block's top_k within its experts; UsageError naming the first mistake.
void check_spec(const TransformerSpec& t);

/// Reads a "gpt" or "llama" model file's sizes; ConfigError naming the JSON
/// path. GPT files take `kv_heads` and `ffn_hidden` too (defaults a and 4h);
/// Llama files must give `ffn_hidden`.
[[nodiscard]] TransformerSpec transformer_spec_from_json(const JsonCursor& root, Family family);

}  // namespace meshsim::model
