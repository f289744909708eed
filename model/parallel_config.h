#pragma once
// The parallel configuration of a training step: how a model is laid out
// over GPUs, independent of how a plan is built for it. Each knob's effect:
//
//   dp               data-parallel replicas; each holds a whole copy of its
//                    stage's training state and all-reduces its gradients
//   tp               tensor-parallel degree (Megatron's split of a layer's
//                    GEMMs); weights, activations and FLOPs of a layer ÷ tp,
//                    plus the layer's all-reduces in every pass
//   pp               pipeline devices; each holds pp·virtual_stages' share
//                    of the layers
//   microbatches     per data-parallel replica per iteration
//   microbatch_size  sequences per microbatch
//   schedule         the order each pipeline device runs its passes in
//                    (pipeline/schedule.h); it fixes the activations in flight
//   virtual_stages   chunks per pipeline device (interleaved 1F1B)
//   recompute        activation recomputation (model/memory.h): none;
//                    selective, the attention's scores and softmax are
//                    dropped after the forward and the backward recomputes
//                    them (its score GEMMs and softmax run again); full, a
//                    forward keeps only each layer's input and the backward
//                    runs the whole forward again
//   sequence_parallel with tp > 1 (Korthikanti et al. 2022): the norms,
//                    dropouts and residuals run on s/tp tokens of each rank,
//                    so their activations ÷ tp; each tensor-parallel
//                    all-reduce becomes a reduce-scatter and an all-gather
//                    of the same bytes
//   zero             how the data-parallel ranks shard the training state
//                    (model/memory.h): 0 replicated, gradients all-reduced;
//                    1 the distributed optimizer (ZeRO-1, Megatron's
//                    --use-distributed-optimizer): gradients reduce-scattered,
//                    each rank updates its 1/dp and the weights are
//                    all-gathered; 2 gradients sharded too (same
//                    communication); 3 weights too (FSDP's full sharding):
//                    each pass first all-gathers its stage's weights
//   ep               expert parallelism (MoE models; Megatron-Core's
//                    expert_model_parallel_size): each group of ep
//                    consecutive replicas (of the dp·cp ranks holding the
//                    same weights) shares the experts, E/ep on each; per
//                    MoE layer and pass the tokens go to their experts'
//                    ranks and back (two all-to-alls); the experts'
//                    gradients are reduced over the dp·cp/ep replicas that
//                    hold the same experts. ep divides dp·cp and the
//                    expert count
//   cp               context parallelism (ring attention; Megatron-Core's
//                    context_parallel_size): cp ranks share each sequence,
//                    s/cp tokens on each (chunks i and 2·cp − 1 − i of 2·cp,
//                    which balances the causal attention), so activations
//                    and every layer's work ÷ cp; per layer and pass they
//                    gather the other ranks' keys and values (the backward
//                    also reduce-scatters their gradients), beside the
//                    attention. They hold the same weights, so gradients
//                    are reduced (and ZeRO shards) over dp·cp ranks. Ranks
//                    in Megatron's order tp-cp-dp-pp; needs fused attention
//   expert_skew      routing: the tokens of the busiest expert-parallel rank
//                    over the mean (1: uniform, the default); that rank's
//                    expert GEMMs set the pace
//   flash_attention  fused attention (FlashAttention; Megatron-Core's
//                    default): the scores are never stored, only their
//                    softmax's log-sum-exp
//   fp8              the weight GEMMs of the transformer layers (QKV, output
//                    projection, MLP, router and experts; forward, input
//                    and weight gradients) with FP8 operands, as Transformer
//                    Engine's FP8 recipe runs them: at the GPU's FP8 peak,
//                    on GPUs that have one; attention, the norms, the
//                    embedding and the output layer stay in the model's
//                    dtype
//   overlap_grad_reduce  gradients reduced in buckets during the last
//                    backward of each chunk (Megatron-Core's
//                    overlap_grad_reduce): each bucket's reduction starts
//                    as the backward has run its layers, beside the rest;
//                    off: once the chunk's last backward is done
//   overlap_param_gather  ZeRO-1/2: each bucket's updated weights gathered
//                    during the next step's forward, just ahead of its
//                    layers (Megatron-Core's overlap_param_gather); in one
//                    step's plan, issued at its start, the chunk's first
//                    forward running each bucket's layers once its gather
//                    is done; off: gathered after the optimizer step
//   bucket_params    parameters per gradient bucket, of one rank's share;
//                    0: Megatron-Core's default, max(4·10^7, 10^6·dp·cp)
//   tp_comm_overlap  the tensor-parallel collectives of a pass beside its
//                    compute instead of after it (Transformer Engine's
//                    userbuffers overlap, Megatron's --tp-comm-overlap)
//   host_per_kernel  the framework's host work per kernel it launches (the
//                    Python and dispatch of eager PyTorch); a pass takes at
//                    least its kernels × this (sim/compute_model.h). Zero,
//                    the default: the host keeps ahead, as under CUDA graphs
//   stage_starts     the first layer of each virtual stage (a split as a run
//                    fixed it); empty: stages of balanced forward FLOPs
//   layer_split      under tensor parallelism, how layers that list their
//                    kernels are shared (pipeline/layer_split.h); nullopt:
//                    chosen per layer

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"
#include "model/memory.h"

namespace meshsim::model {

enum class Schedule : std::uint8_t { gpipe, one_f_one_b, eager_1f1b, interleaved_1f1b, zb_h1 };
inline constexpr EnumNames<Schedule, 5> kScheduleNames{"schedule",
                                                       {{{Schedule::gpipe, "gpipe"},
                                                         {Schedule::one_f_one_b, "1f1b"},
                                                         {Schedule::eager_1f1b, "eager-1f1b"},
                                                         {Schedule::interleaved_1f1b, "interleaved-1f1b"},
                                                         {Schedule::zb_h1, "zb-h1"}}}};
[[nodiscard]] inline std::string_view to_string(Schedule s) {
  return kScheduleNames.name(s);
}
[[nodiscard]] inline std::optional<Schedule> schedule_from(std::string_view s) {
  return kScheduleNames.parse(s);
}

/// How the tensor ranks of a stage share a layer that lists its kernels:
/// its GEMMs' columns (Megatron's split), or its microbatch, each rank
/// holding the whole layer.
enum class LayerSplit : std::uint8_t { channels, batch };
inline constexpr EnumNames<LayerSplit, 2> kLayerSplitNames{
    "layer split", {{{LayerSplit::channels, "channels"}, {LayerSplit::batch, "batch"}}}};
[[nodiscard]] inline std::string_view to_string(LayerSplit s) {
  return kLayerSplitNames.name(s);
}

struct ParallelConfig {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int microbatches = 1;
  int microbatch_size = 1;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;
  Recompute recompute = Recompute::none;
  std::vector<int> stage_starts;
  std::optional<LayerSplit> layer_split;
  bool sequence_parallel = false;
  ZeroStage zero = ZeroStage::none;
  bool flash_attention = false;
  int ep = 1;
  double expert_skew = 1;
  int cp = 1;
  bool fp8 = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  double bucket_params = 0;
  bool tp_comm_overlap = false;
  Time host_per_kernel{};
  [[nodiscard]] bool full_recompute() const { return recompute == Recompute::full; }
  /// Ranks per tensor rank and pipeline device holding the same weights:
  /// the data- and context-parallel ones, context ranks adjacent.
  [[nodiscard]] int replicas() const { return dp * cp; }
  [[nodiscard]] int gpus() const { return dp * cp * tp * pp; }
  /// Parameters per gradient bucket (bucket_params, or its default).
  [[nodiscard]] double grad_bucket_params() const {
    return bucket_params > 0 ? bucket_params : std::max(4e7, 1e6 * replicas());
  }
  /// What the activations of a stage's layers depend on; full recomputation
  /// is the pipeline's own (a stage keeps its layers' inputs), so the layers
  /// are counted as stored.
  [[nodiscard]] ActivationOptions activation_options() const {
    return {tp, sequence_parallel, full_recompute() ? Recompute::none : recompute, flash_attention, cp};
  }
  friend auto operator<=>(const ParallelConfig&, const ParallelConfig&) = default;
};

/// The degrees of `c` as people write them: "dp 4 x tp 8 x pp 8", with
/// " x cp 2" after dp when there is context parallelism.
[[nodiscard]] std::string degrees(const ParallelConfig& c);

}  // namespace meshsim::model
