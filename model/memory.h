#pragma once
// What one GPU of a training step holds, by part, to the byte.
//
// Training state, per parameter on the rank (Rajbhandari et al., "ZeRO",
// SC'20, §3.1 and §5; Megatron-LM's distributed optimizer, its
// docs/source/api-guide/dist_optimizer.md): weights w, gradients g and
// optimizer state o bytes; ZeRO stage 1 (Megatron's distributed optimizer)
// shards o over the d data-parallel ranks, stage 2 also g, stage 3 (FSDP's
// full sharding) also w:
//   bytes per parameter = w·(1/d at stage 3) + g·(1/d at ≥ 2) + o·(1/d at ≥ 1)
// Mixed precision with Adam (kMixedPrecision): w = 2, g = 2, o = 12 (fp32
// master weights, momentum and variance): 16, 4 + 12/d at stage 1, 2 + 14/d
// at 2, 16/d at 3 (ZeRO's Figure 1). Megatron-LM with bf16 weights keeps
// fp32 gradients (kFp32Gradients: g = 4): 18, 6 + 12/d under its
// distributed optimizer.
//
// Activations stored for the backward pass, per sequence of s tokens, per
// transformer layer, on one of t tensor-parallel ranks, counted tensor by
// tensor as Korthikanti et al. ("Reducing Activation Recomputation in Large
// Transformer Models", MLSys'23, §4.1) count them, element size e (masks
// one byte):
//   R  kept whole on every tensor rank, ÷ t with sequence parallelism:
//      the two norms' inputs 2·s·h·e, the inputs of the attention's and
//      the MLP's first GEMMs 2·s·h·e, dropout masks after the attention
//      and after the MLP 2·s·h (families with dropout)
//   P  split over the tensor ranks (÷ t): Q s·h·e, K and V 2·s·g·d·e, the
//      output projection's input s·h·e; the MLP's activation input and the
//      last GEMM's input (GeLU 2·s·f·e; SwiGLU the gate and up outputs and
//      the down GEMM's input, 3·s·f·e)
//   S  the attention scores (÷ t): softmax output a·s²·e, and with dropout
//      its mask a·s² and output a·s²·e; with fused (flash) attention only
//      the softmax's log-sum-exp, a·s fp32 values (Dao et al. 2022)
// GPT (e = 2): R = 10·s·h, P = 24·s·h, S = 5·a·s², Korthikanti's Table 2:
//   none        s·h·(10 + 24/t + 5·a·s/(h·t)),  with sp  s·h·(34 + 5·a·s/h)/t
//   selective   (S recomputed, not stored)       s·h·(10 + 24/t),  sp  34·s·h/t
//   full        only the layer's input, s·h·e (2·s·h), ÷ t with sp (Megatron
//               checkpoints the sequence-parallel shard)
// An MoE layer's MLP part (tokens routed top-k, so k·s token rows reach the
// experts under any routing): the router's input is the MLP input above;
// the experts store their dispatched inputs k·s·h·e and activations
// k·s·f_e·e·(2 GeLU | 3 SwiGLU) ÷ t (experts split as the dense MLP), the
// router's fp32 logits s·E·4, and each shared expert as a dense MLP of f_s.
//
// Context parallelism over c ranks (Megatron-Core's context_parallel_size;
// its docs/source/api-guide/context_parallel.rst): each rank holds s/c of
// every sequence's tokens through the whole layer, so every part above,
// and the full-recomputation checkpoint, ÷ c.
//
// Reserve: what a process holds beyond its tensors: the CUDA context (287 MB
// with lazy module loading, 667 MB without: PyTorch pull request 86509),
// NCCL's buffers (NCCL_BUFFSIZE, 4 MiB per channel and connection, for each
// communicator a rank joins), and the caching allocator's fragmentation.
// kDefaultReserve, 2 GiB, is that sum rounded up for a rank in three or
// four communicators; `--memory-reserve` sets it.

#include <cstdint>
#include <string_view>

#include "core/enum_names.h"
#include "core/units.h"
#include "model/transformer.h"

namespace meshsim::model {

enum class ZeroStage : std::uint8_t { none, optimizer, gradients, parameters };
inline constexpr EnumNames<ZeroStage, 4> kZeroStageNames{"ZeRO stage",
                                                         {{{ZeroStage::none, "0"},
                                                           {ZeroStage::optimizer, "1"},
                                                           {ZeroStage::gradients, "2"},
                                                           {ZeroStage::parameters, "3"}}}};

/// Bytes per parameter of the training state (above).
struct StatePrecision {
  double weights = 2;
  double gradients = 2;
  double optimizer = 12;
  [[nodiscard]] constexpr double total() const { return weights + gradients + optimizer; }
  friend bool operator==(const StatePrecision&, const StatePrecision&) = default;
};
inline constexpr StatePrecision kMixedPrecision{2, 2, 12};
inline constexpr StatePrecision kFp32Gradients{2, 4, 12};

/// The state of Adam training with weights of `element_bytes`: weights and
/// gradients of that size; fp32 momentum and variance (wider: the weights'
/// size), and fp32 master weights when the weights are narrower than 4
/// bytes. 16-bit weights: kMixedPrecision; fp32: 4 + 4 + 8.
[[nodiscard]] StatePrecision state_precision(double element_bytes);

/// Training-state bytes per parameter held on one of `dp` data-parallel ranks.
[[nodiscard]] double state_bytes_per_param(const StatePrecision& p, ZeroStage zero, int dp);

enum class Recompute : std::uint8_t { none, selective, full };
inline constexpr EnumNames<Recompute, 3> kRecomputeNames{
    "recomputation",
    {{{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}}};

struct ActivationOptions {
  int tp = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  bool flash_attention = false;
  int cp = 1;  // context-parallel ranks sharing each sequence's tokens
};

/// Stored activation bytes per sequence of one transformer layer (dense, or
/// MoE when `moe_layer`) with elements of `element_bytes` (above).
[[nodiscard]] double layer_activation_bytes(const TransformerSpec& t, bool moe_layer, double element_bytes,
                                            const ActivationOptions& o);

inline constexpr Bytes kDefaultReserve = Bytes::GiB(2);

/// Whether a rank's `bytes` of tensors fit a GPU of `capacity` bytes that
/// keeps `reserve` besides (capacity 0: unknown, taken to fit).
[[nodiscard]] inline bool fits_in(double bytes, double capacity, Bytes reserve) {
  return capacity <= 0 || bytes + static_cast<double>(reserve.count()) <= capacity;
}

}  // namespace meshsim::model
