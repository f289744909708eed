#pragma once
// How the t tensor ranks of a stage share each layer that lists its kernels
// (a layers-form model with `kernels`, docs/models.md):
//
//   channels  each rank holds 1/t of the layer's weights and computes 1/t
//             of every GEMM's columns (n ÷ t); the layer's own all-reduces
//             (its kernel list's `allreduces`) run in every forward and
//             backward of every microbatch (and again when a backward
//             recomputes the forward).
//   batch     each rank holds the whole layer and runs 1/t of the
//             microbatch (the GEMMs' rows ÷ t): no all-reduce per pass,
//             but the ranks all-reduce the layer's gradients once per
//             iteration, and each holds its whole training state.
//
// A tensor that a batch-split layer makes and a channel-split layer of the
// same stage reads is gathered over the ranks in the forward (all-gather)
// and scattered back in the backward (reduce-scatter); the other way round
// each rank keeps its slice. A tensor from an earlier stage arrives whole
// on every rank, and a channel-split layer's output is whole after its
// all-reduce. Memory-bound kernels and activations are ÷ t either way.
//
// choose_layer_splits picks, per pipeline device, the splits that move the
// fewest ring bytes per iteration (an all-reduce of S moves 2(t−1)/t·S, an
// all-gather or reduce-scatter (t−1)/t·S), subject to the device's
// weights, gradients and optimizer state plus its activations fitting its
// memory. That is the trade Alpa's auto-sharding settles for a stage with
// an ILP (communication cost under a memory budget), here over two
// choices per layer: exact (every assignment) up to kExactSplitLayers
// layers on a device, else a greedy descent. Ties go to channels; so does
// every layer when the microbatch does not divide over the ranks.

#include <string>
#include <vector>

#include "model/model.h"
#include "model/parallel_config.h"
#include "pipeline/stages.h"

namespace meshsim::pipeline {

inline constexpr int kExactSplitLayers = 16;

/// Whether `cfg` leaves a split to choose: tensor parallelism over a
/// model whose layers list their kernels.
[[nodiscard]] bool layers_can_split(const model::Model& model, const model::ParallelConfig& cfg);

/// Sets `splits` and `batch_param_bytes` of every virtual stage of `cfg`
/// (stage s on pipeline device s mod pp), and recomputes its
/// `tp_allreduce_bytes`: the all-reduces of its channel-split layers plus
/// its gathers, counted as all-reduces of half their bytes (a ring
/// all-reduce is a reduce-scatter and an all-gather). `free_bytes`: per
/// pipeline device, the memory left with every layer split by channels
/// (empty: no limit). Leaves the stages alone when tp is 1 or the model's
/// layers list no kernels; cfg.layer_split, when set, fixes every split
/// (UsageError for batch when the microbatch does not divide by tp, or
/// when the model's layers list no kernels).
void choose_layer_splits(const model::Model& model, std::vector<VirtualStage>& stages,
                         const model::ParallelConfig& cfg, const std::vector<double>& free_bytes);

/// The splits of `vs` as runs of layers, e.g. "batch 0-4, channels 5-8";
/// empty when it has none.
[[nodiscard]] std::string describe_splits(const VirtualStage& vs);

}  // namespace meshsim::pipeline
