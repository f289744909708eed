#pragma once
// What laying a model out on a pipeline makes (pipeline/layout.h): its
// virtual stages, the tensors that cross between them, and each pipeline
// device's memory.

#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "model/parallel_config.h"

namespace meshsim::pipeline {

struct VirtualStage {
  int first_layer = 0;  // [first_layer, end_layer) of Model::layers
  int end_layer = 0;
  double forward_flops = 0;          // per sample, whole stage (all tensor ranks)
  double param_bytes = 0;            // whole stage
  double activation_bytes = 0;       // per sample, on one tensor (and context) rank
  double tp_allreduce_bytes = 0;     // per sample, per forward, per context rank
  double expert_param_bytes = 0;     // whole stage: the routed experts' (split over ep)
  double expert_exchange_bytes = 0;  // per sample, per forward: the MoE layers' token dispatch and combine
  // per sample, per forward, whole sequence, all tensor ranks: the keys and
  // values of its transformer layers (model::kv_bytes), what context
  // parallelism gathers
  double context_exchange_bytes = 0;
  // Recomputation: per sample, the inputs of the stage's layers (each the
  // previous layer's output, the received activation for a later stage's
  // first layer; the model's first layer reads token ids, left out) and the
  // largest one layer's activations.
  double checkpoint_bytes = 0;
  double largest_layer_activation_bytes = 0;
  // Tensor parallelism over layers with kernel lists (layer_split.h): each
  // layer's split, from first_layer (empty: all by channels), and the
  // parameters of those split by batch, whole on every tensor rank.
  std::vector<model::LayerSplit> splits;
  double batch_param_bytes = 0;
};

/// A tensor that crosses from one virtual stage to a later one.
struct StageTransfer {
  int src_stage = 0;
  int dst_stage = 0;
  int layer = 0;                    // whose output it is
  int side_output = -1;             // -1: the layer's output; k: its side output k
  std::vector<std::int64_t> shape;  // with the microbatch dimension first
  Bytes bytes;
  std::string strategy;  // the plan used for it (auto: what auto chose)
};

struct DeviceMemory {
  double params = 0;                // parameters of the GPU's tensor shard (before ZeRO's sharding)
  double weights_bytes = 0;         // model-dtype weights, per GPU (÷ dp under ZeRO-3)
  double gradient_bytes = 0;        // (÷ dp under ZeRO-2 and 3)
  double optimizer_bytes = 0;       // Adam's moments and master weights (÷ dp under ZeRO-1 to 3)
  double training_state_bytes = 0;  // weights + gradients + optimizer (model/memory.h)
  double activation_bytes = 0;      // peak of activations in flight
  int peak_in_flight = 0;           // microbatch-chunks held at that peak
  [[nodiscard]] double total() const { return training_state_bytes + activation_bytes; }
};

}  // namespace meshsim::pipeline
