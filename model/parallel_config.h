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
//   recompute        full activation recomputation: a forward keeps only
//                    each layer's input; the backward runs the forward again
//   stage_starts     the first layer of each virtual stage (a split as a run
//                    fixed it); empty: stages of balanced forward FLOPs
//   layer_split      under tensor parallelism, how layers that list their
//                    kernels are shared (pipeline/layer_split.h); nullopt:
//                    chosen per layer

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/enum_names.h"

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
  bool recompute = false;
  std::vector<int> stage_starts;
  std::optional<LayerSplit> layer_split;
  friend auto operator<=>(const ParallelConfig&, const ParallelConfig&) = default;
};

}  // namespace meshsim::model
