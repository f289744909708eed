#pragma once
// The kernels of one transformer layer as Megatron-LM runs it with tensor
// parallelism of degree t: b sequences of l new tokens, each after c tokens
// whose keys and values are cached (c = 0 without token slicing), hidden
// size h, a attention heads of size d = h/a, g key/value heads, MLP hidden
// size f, T = b·l tokens, element size e (model/transformer.h names the
// families).
//
// Forward, in order:
//   norm                        memory: 2·T·h elements
//   QKV projection              GEMM T × (h + 2·g·d)/t × h
//   attention scores            b·a/t GEMMs l × (c + l) × d
//   softmax                     memory: 2·b·(a/t)·l·(c + l)
//   attention over values       b·a/t GEMMs l × d × (c + l)
//   output projection           GEMM T × h × h/t
//   bias, dropout and residual  memory: 3·T·h (the residual add alone
//                               moves as much)
//   norm                        memory: 2·T·h
//   dense MLP                   GeLU: GEMM T × f/t × h, GeLU memory 2·T·f/t,
//                               GEMM T × h × f/t. SwiGLU: the gate and up
//                               GEMMs as one T × 2f/t × h, the gated
//                               activation memory 3·T·f/t, GEMM T × h × f/t
//   or MoE MLP (E experts,      the router GEMM T × E × h (whole on every
//   top k, expert size f_e)     tensor rank), its softmax and top-k memory
//                               2·T·E; tokens permuted to their experts
//                               2·T·k·h; the rank's E/ep expert GEMMs of
//                               skew·ep·T·k/E rows each (ep ranks send it
//                               their tokens; uniform routing at skew 1) as
//                               one batched GEMM per MLP GEMM (f_e split
//                               over the tensor ranks), their
//                               activation; unpermuted and combined
//                               2·T·k·h; shared experts as one dense MLP of
//                               their summed size
//   bias, dropout and residual  memory: 3·T·h
// Backward: each GEMM m × n × k becomes the input gradient m × k × n and
// the weight gradient k × n × m; each memory-bound kernel is counted as
// moving twice its forward bytes (it reads the gradient and the saved
// input and writes the gradient: an approximation).
// A GPT layer's FLOPs sum to 24·T·h²/t + 4·b·l·(c + l)·h/t forward and
// twice that backward, the counts the roofline uses; the tensor-parallel
// all-reduces are not kernels here (the caller times them on the network).
// GEMM 1 and 2 are the attention products; every other GEMM multiplies by
// weights. Fused attention (FlashAttention; Dao et al. 2022): one kernel
// computes scores, softmax and values tile by tile and skips the tiles a
// causal mask hides, so here the two attention GEMMs give way to one
// attention kernel (plan::KernelList::Attention) of b·a/t heads, l queries
// each against c + l/2 keys (half the new tokens' on average), and the
// softmax kernel is gone (the scores never reach memory); every GEMM then
// multiplies by weights. Its backward is one attention kernel of five
// products: the scores recomputed, as FlashAttention's backward does, and
// four gradients. The softmax is the second memory kernel only without it.

#include <optional>
#include <vector>

#include "model/model.h"
#include "plan/plan.h"
#include "sim/compute_model.h"

namespace meshsim::model {

struct LayerShape {
  double hidden = 0;
  double heads = 0;
  double sequences = 1;  // b
  double tokens = 0;     // l, per sequence
  double context = 0;    // c
  double tp = 1;
  plan::DType dtype = plan::kDefaultMathDType;
  double kv_heads = 0;                        // g; 0: a
  double ffn = 0;                             // f; 0: 4h
  bool gated = false;                         // SwiGLU
  std::optional<MoeSpec> moe = std::nullopt;  // an MoE layer's experts
  double ep = 1;                              // expert-parallel ranks sharing the experts
  double expert_skew = 1;                     // the busiest rank's tokens over the mean
  bool fused_attention = false;               // FlashAttention: causal, no softmax kernel
};

/// One layer of transformer model `m` (an MoE layer when `moe_layer`, its
/// experts over `ep` ranks with the busiest at `expert_skew`) over
/// `sequences` whole sequences (no cached context) at tensor-parallel degree `tp`.
[[nodiscard]] LayerShape whole_sequences(const Model& m, int sequences, int tp, bool moe_layer = false,
                                         int ep = 1, double expert_skew = 1);

/// One of `cp` context-parallel ranks' share of layer `s` (fused, causal
/// attention; Megatron-Core's load-balanced split, each rank holding
/// sequence chunks i and 2·cp − 1 − i of 2·cp): l/cp tokens per sequence,
/// whose queries see l/2 keys on average over the rank's two chunks. So it
/// is a slice of l/cp new tokens after c = (l/cp)·(cp − 1)/2 cached ones:
/// fused attention's c + l'/2 keys per query are l/2, and the cp ranks
/// together do the whole causal work. Unchanged for cp = 1.
[[nodiscard]] LayerShape context_shard(LayerShape s, int cp);

/// Which passes' kernels a list holds (kv_cache_kernels,
/// terapipe_attention_kernels).
enum class KernelPasses { both, forward, backward };

[[nodiscard]] plan::KernelList layer_forward(const LayerShape& s);
/// The backward kernels of a layer whose forward kernels are `forward`
/// (each attention kernel's backward with it).
[[nodiscard]] plan::KernelList layer_backward(const plan::KernelList& forward);
/// What a framework that accumulates gradients runs after each backward
/// pass of a layer: one memory-bound kernel adding the pass's weight
/// gradients into the accumulated ones, reading both and writing the sum,
/// 3·(12h² + 13h)/t elements (the layer's parameters on one tensor rank;
/// the few replicated ones, layer norms and row-parallel biases, counted as
/// split). PyTorch's autograd does exactly this on every backward call
/// (`.grad` accumulates in place), so a pipeline that runs one backward
/// per token slice or microbatch pays it once per slice or microbatch.
[[nodiscard]] plan::KernelList gpt_layer_grad_accumulation(const LayerShape& s);

/// What TeraPipe's code does with a layer's key and value caches for one
/// slice (s: b sequences, l tokens after c; caches of `sequence` tokens,
/// b·h/t elements per token each), memory-bound kernels for the keys and
/// again for the values: forward, the slice's new entries written in (2l);
/// backward, the cache view's gradient made whole (zeros over the cache, L,
/// and the seen part copied in, 2(c + l)), summed with the next slice's
/// gradient (3L, but for the last slice), cloned by the assignment's
/// backward (2L) and its slice zeroed (l). Its whole-cache copies make every
/// slice's backward pay for the full sequence.
[[nodiscard]] plan::KernelList kv_cache_kernels(const LayerShape& s, double sequence,
                                                KernelPasses passes = KernelPasses::both);
/// The memory-bound kernels TeraPipe's attention code runs for one slice
/// beyond Megatron-LM's list (s: b sequences, l tokens after c, E =
/// b·(a/t)·l·(c + l) attention scores, element size e), forward then
/// backward: the queries scaled (2·b·l·h/t elements); the causal mask built
/// for the slice and joined to zeros over the context (5l² + 3l·c); the mask
/// added to the scores (2E); the softmax taken in fp32 and cast back, 8E
/// bytes more than a softmax in the layer's type (none for an fp32 layer);
/// the heads' output made contiguous (2·b·l·h/t). Backward: twice the
/// scaling, softmax and copy bytes (the mask and its add have no gradient).
[[nodiscard]] plan::KernelList terapipe_attention_kernels(const LayerShape& s,
                                                          KernelPasses passes = KernelPasses::both);
/// How many kernels the forward pass of one TeraPipe layer slice launches:
/// layer_forward's and the forward ones of kv_cache_kernels and
/// terapipe_attention_kernels.
[[nodiscard]] int terapipe_forward_kernel_count(const LayerShape& s);
/// The forward and backward kernels of one layer of GPT model `m` (whole
/// sequences, no cached context) for every tensor-parallel degree in `tps`
/// and microbatch size in `microbatch_sizes`: what `meshsim calibrate
/// --layers` measures. UsageError for a model that is not a GPT, or a
/// degree that does not divide its heads.
[[nodiscard]] std::vector<plan::KernelList> gpt_layer_kernel_lists(const Model& m,
                                                                   const std::vector<int>& tps,
                                                                   const std::vector<int>& microbatch_sizes);

}  // namespace meshsim::model
