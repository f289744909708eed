#pragma once
// The kernels of a pipeline pass, for models whose layers have kernel lists
// (GPT models: Model::hidden > 0). One tensor rank of virtual stage `vs`,
// microbatches of b sequences of s tokens, tensor-parallel degree t:
//
//   transformer layer   forward: its kernels as Megatron-LM runs them
//                       (layer_kernels.h); backward: the forward's mirror,
//                       after a second forward with recomputation. With the
//                       backward split (zb-h1), B holds the input and
//                       attention gradients and the memory-bound kernels, W
//                       the weight gradients of the four weight GEMMs.
//   layer with FLOPs,   one GEMM of b·s rows from k = FLOPs / (2·s·width)
//   not a transformer   columns to width / t (the LM head: k = h, width the
//                       vocabulary, split over the ranks); backward its two
//                       gradients (input in B, weight in W).
//   layer with a        its GEMMs with the microbatch in their rows (or
//   kernel list         batch), n ÷ t (split by batch, VirtualStage::splits:
//   (layers form)       the microbatch ÷ t instead), and its memory-bound
//                       kernels ÷ t; backward: each GEMM's two gradients (of
//                       a weight in W when split), each memory kernel twice
//                       its bytes.
//   With context parallelism every layer runs one of cp ranks' s/cp tokens,
//   a transformer layer's attention its share of the causal work
//   (model::context_shard).
//   An MoE layer's experts are those of one of `ep` expert-parallel ranks,
//   at the load of the busiest (`expert_skew`). With fused attention
//   (FlashAttention) the attention is one causal-halved attention kernel
//   without a softmax kernel (model/layer_kernels.h), whose backward
//   recomputes the scores, as FlashAttention's backward does; selective
//   recomputation then adds nothing (the scores were never stored).
//   With FP8 the transformer layers' weight GEMMs, forward and both
//   gradients, have FP8 operands (plan::KernelList::Gemm::fp8).
//   Every list carries the framework's host work per launched kernel
//   (`host_per_kernel`: an eager framework's; zero under CUDA graphs).
//   With full recomputation every layer's backward first repeats its
//   forward; with selective recomputation a transformer layer's backward
//   first repeats its attention scores, softmax and values GEMMs.
//   layer without FLOPs one memory-bound kernel writing and reading its
//                       output, b·(its output elements)·element size each
//                       way (the embedding's lookup); backward twice that.
//
// The simulator times such a list GEMM by GEMM in tiles and waves
// (sim/compute_model.h), which a pass's FLOPs alone (the roofline of
// pass_cost) cannot: thin microbatches fill only part of the SMs, and the
// memory-bound kernels and launches add their own time. Layer lists without
// kernel lists keep the roofline.

#include <optional>
#include <vector>

#include "model/model.h"
#include "pipeline/schedule.h"
#include "pipeline/stages.h"
#include "plan/plan.h"

namespace meshsim::pipeline {

/// What a pass's kernels depend on beyond its stage: the parallel
/// configuration's knobs (model/parallel_config.h); split_backward for zb-h1.
struct PassOptions {
  int microbatch_size = 1;
  int tp = 1;
  bool split_backward = false;
  model::Recompute recompute = model::Recompute::none;
  int ep = 1;
  double expert_skew = 1;
  bool fused_attention = false;
  int cp = 1;        // context-parallel ranks: each runs s/cp tokens (model::context_shard)
  bool fp8 = false;  // the transformer layers' weight GEMMs with FP8 operands
  Time host_per_kernel{};
};
[[nodiscard]] PassOptions pass_options(const model::ParallelConfig& cfg);

/// The kernels of one pass as above; nullopt for a model without kernel
/// lists (has_kernel_lists) and for a pass that would list none (a W pass
/// of layers without weights).
[[nodiscard]] std::optional<plan::KernelList> pass_kernels(const model::Model& m, const VirtualStage& vs,
                                                           Pass pass, const PassOptions& o);

/// What `meshsim calibrate --layers` times for model `m`, for every
/// tensor-parallel degree in `tps` and microbatch size in `microbatch_sizes`:
/// a GPT model's one layer, forward and backward (gpt_layer_kernel_lists);
/// a model whose layers list their kernels, its whole forward and backward
/// pass (pass_kernels, no recomputation), every layer split by channels
/// and, when the microbatch divides over the ranks, every layer by batch.
/// UsageError for a model with neither, or a degree or size below 1.
[[nodiscard]] std::vector<plan::KernelList> calibration_kernel_lists(
    const model::Model& m, const std::vector<int>& tps, const std::vector<int>& microbatch_sizes);

}  // namespace meshsim::pipeline
