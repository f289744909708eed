#include "model/memory.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::model;

namespace {

// h = 64, a = 4, s = 16: s·h = 1,024 and 5·a·s/h = 5.
TransformerSpec small(Family family) {
  TransformerSpec t;
  t.family = family;
  t.layers = 1;
  t.hidden = 64;
  t.heads = 4;
  t.kv_heads = family == Family::gpt ? 4 : 2;
  t.ffn_hidden = family == Family::gpt ? 256 : 96;
  t.sequence = 16;
  t.vocabulary = 100;
  return t;
}

double gpt(const ActivationOptions& o) {
  return layer_activation_bytes(small(Family::gpt), false, 2, o);
}

}  // namespace

TEST_CASE("GPT activations are Korthikanti's Table 2, row by row", "[model][memory]") {
  // s·h·(34 + 5·a·s/h) at t = 1 and the rows at t = 2, s·h = 1,024:
  CHECK(gpt({}) == 1024 * 39);                                            // 34 + 5
  CHECK(gpt({.tp = 2}) == 1024 * 24.5);                                   // 10 + 12 + 2.5
  CHECK(gpt({.tp = 2, .sequence_parallel = true}) == 1024 * 19.5);        // 17 + 2.5
  CHECK(gpt({.tp = 2, .recompute = Recompute::selective}) == 1024 * 22);  // 10 + 12
  CHECK(gpt({.tp = 2, .sequence_parallel = true, .recompute = Recompute::selective}) == 1024 * 17);
  CHECK(gpt({.tp = 2, .recompute = Recompute::full}) == 2 * 1024);  // 2·s·h
  CHECK(gpt({.tp = 2, .sequence_parallel = true, .recompute = Recompute::full}) == 1024);
  // Fused attention stores the log-sum-exp, a·s fp32 values, for the 5·a·s² term: 34·s·h + 4·4·16.
  CHECK(gpt({.flash_attention = true}) == 1024 * 34 + 256);
}

TEST_CASE("context parallelism divides every part of a layer's activations by cp", "[model][memory]") {
  // t = 2 with sequence parallelism and fused attention: 34·s·h/2 + a·s·4/2
  // = 17,408 + 128; two context ranks hold half the tokens each: 8,768.
  CHECK(gpt({.tp = 2, .sequence_parallel = true, .flash_attention = true}) == 17'536);
  CHECK(gpt({.tp = 2, .sequence_parallel = true, .flash_attention = true, .cp = 2}) == 8'768);
  // Full recomputation keeps the layer's input: 2·s·h / t (sp) / cp = 512.
  CHECK(gpt({.tp = 2, .sequence_parallel = true, .recompute = Recompute::full, .cp = 2}) == 512);
  CHECK_THROWS_AS(gpt({.cp = 0}), UsageError);
}

TEST_CASE("Llama activations: no dropout, grouped keys and values, SwiGLU, by hand", "[model][memory]") {
  const TransformerSpec t = small(Family::llama);
  // bf16, s = 16, h = 64, g·d = 32, f = 96:
  //   R: norm inputs 2·1,024·2 + first-GEMM inputs 2·1,024·2 = 8,192 (no masks)
  //   P: Q 2,048 + K, V 2·16·32·2 = 2,048 + output input 2,048 + SwiGLU 3·16·96·2 = 9,216: 15,360
  //   S: softmax output 4·16²·2 = 2,048
  CHECK(layer_activation_bytes(t, false, 2, {}) == 8192 + 15360 + 2048);
  CHECK(layer_activation_bytes(t, false, 2, {.tp = 2, .sequence_parallel = true}) ==
        (8192 + 15360 + 2048) / 2.0);
  CHECK(layer_activation_bytes(t, false, 2, {.tp = 2, .recompute = Recompute::selective}) ==
        8192 + 15360 / 2.0);
  CHECK(layer_activation_bytes(t, false, 2, {.flash_attention = true}) == 8192 + 15360 + 4 * 16 * 4);
  CHECK(layer_activation_bytes(t, false, 2, {.tp = 4, .recompute = Recompute::full}) == 16 * 64 * 2);
}

TEST_CASE("an MoE layer's activations count its routed tokens", "[model][memory]") {
  TransformerSpec t = small(Family::llama);
  t.moe = MoeSpec{4, 2, 32, 1, 48, 1, 0};
  // R adds the dispatched tokens 16·2·64·2 = 4,096 and the fp32 router logits 16·4·4 = 256;
  // P's MLP part is the experts' 32 rows·32·2·3 = 6,144 and the shared expert's 16·48·2·3 = 4,608
  // beside the attention's 6,144; S is 2,048.
  CHECK(layer_activation_bytes(t, true, 2, {}) == (8192 + 4096 + 256) + (6144 + 6144 + 4608) + 2048);
}

TEST_CASE("training state per parameter by ZeRO stage", "[model][memory]") {
  // ZeRO's Figure 1 (K = 12), d = 8: 16, 4 + 12/8, 2 + 14/8, 16/8.
  CHECK(state_bytes_per_param(kMixedPrecision, ZeroStage::none, 8) == 16);
  CHECK(state_bytes_per_param(kMixedPrecision, ZeroStage::optimizer, 8) == 5.5);
  CHECK(state_bytes_per_param(kMixedPrecision, ZeroStage::gradients, 8) == 3.75);
  CHECK(state_bytes_per_param(kMixedPrecision, ZeroStage::parameters, 8) == 2);
  // Megatron's distributed optimizer with bf16 weights and fp32 gradients: 18, then 6 + 12/d.
  CHECK(kFp32Gradients.total() == 18);
  CHECK(state_bytes_per_param(kFp32Gradients, ZeroStage::optimizer, 8) == 7.5);
  CHECK(state_bytes_per_param(kMixedPrecision, ZeroStage::parameters, 1) == 16);
  CHECK_THROWS_AS(state_bytes_per_param(kMixedPrecision, ZeroStage::none, 0), UsageError);
}
