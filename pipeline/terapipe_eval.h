#pragma once
// One TeraPipe run as `meshsim terapipe` makes it: no slicing, the best
// uniform slicing and the dynamic program (pipeline/terapipe.h) on one model,
// topology and pipeline shape, under the per-GPU memory limit; and the
// settings of the TeraPipe paper whose measured times we hold.

#include <span>
#include <string_view>

#include "model/model.h"
#include "pipeline/terapipe.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::pipeline {

/// What is sliced, and how.
struct TeraPipeShape {
  int pp = 1;     // pipeline stages
  int op = 1;     // tensor (operator) parallel degree per stage
  int dp = 1;     // data-parallel replicas
  int batch = 1;  // sequences per iteration, over all replicas
  int granularity = 8;
  int uniform_slices = 0;  // > 0: also microbatches of one sequence in exactly this many slices
  bool memory_limit = true;
  double host_per_kernel = 0;  // seconds; SliceCostModel::host_per_kernel
};

struct TeraPipeOutcome {
  TokenSlicing none, uniform, dp, fixed;  // fixed: uniform_slices (empty without)
  TokenSlicing uniform_single;            // the best uniform slicing of microbatches of one sequence
  SliceCostModel cost_model;
  int max_microbatch = 0;  // sequences; 0: no memory limit
  double capacity = 0;     // bytes per GPU
  double dp_seconds = 0;   // wall time of the DP
  /// The iteration: a slicing's pipeline time plus the replicas' gradient
  /// all-reduce and the weight update.
  [[nodiscard]] double iteration(const TokenSlicing& s) const {
    return s.time + cost_model.grad_allreduce_s + cost_model.update_s;
  }
};

/// UsageError when the batch does not split over the replicas, the GPU has
/// no compute model, or one sequence does not fit in its memory.
/// `progress`: the DP's (terapipe_dp).
[[nodiscard]] TeraPipeOutcome evaluate_terapipe(const model::Model& model, const topology::Topology& topo,
                                                const sim::SimOptions& opts, const TeraPipeShape& shape,
                                                const CapProgress& progress = {});

/// A setting of Li et al. (ICML 2021), Table 1 with the times of its Fig. 5:
/// GPUs, batch, data/pipeline/operator parallelism and the measured
/// iteration times without and with token slicing; and, where the paper's
/// slicing ablation gives it, the DP's speedup over the best uniform
/// slicing (0: not published for this setting).
struct TeraPipePaperSetting {
  std::string_view id;     // "(5)"
  std::string_view model;  // a name under configs/models/
  int gpus, batch, dp, pp, op;
  double without_s, with_s;
  double dp_over_uniform = 0;
};
/// The six settings whose times we hold: (1), (5), (6), (8), (9), (10).
[[nodiscard]] std::span<const TeraPipePaperSetting> terapipe_paper_settings();
/// The setting of that id, or nullptr.
[[nodiscard]] const TeraPipePaperSetting* find_terapipe_paper_setting(std::string_view id);
/// The paper's ablation: setting `setting` with microbatches of one
/// sequence cut into exactly `slices` equal slices, its measured time.
struct TeraPipeAblationPoint {
  std::string_view setting;
  int slices;
  double time_s;
};
/// The points we hold: setting (9) with 16 and 128 slices.
[[nodiscard]] std::span<const TeraPipeAblationPoint> terapipe_ablation();
/// The host work per launched kernel of TeraPipe's PyTorch code on the
/// paper's machines (seconds), from the paper's Fig. 3: one GPT-3 1B layer's
/// forward pass on one GPU of the paper's (Volta) cluster takes 1.45 ms at any length up to 256 tokens,
/// where the GPU waits for the host; divided by the kernels that pass
/// launches (terapipe_forward_kernel_count).
[[nodiscard]] double terapipe_paper_host_per_kernel();
/// The shape that setting runs (granularity 8, memory limit on, the
/// paper's host work per kernel).
[[nodiscard]] TeraPipeShape paper_shape(const TeraPipePaperSetting& s);

}  // namespace meshsim::pipeline
