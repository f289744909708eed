#pragma once
// What a pipeline's plan is built from: a parallel configuration
// (model/parallel_config.h) and how its stage transfers run and which GPUs
// its ranks take.

#include "model/parallel_config.h"
#include "reshard/reshard.h"

namespace meshsim::pipeline {

/// How a pipeline's plan is built for a parallel configuration: the stage
/// transfers' method, their overlap, and which GPUs the ranks take.
struct PipelineConfig : model::ParallelConfig {
  reshard::Strategy reshard = reshard::Strategy::broadcast;
  bool reshard_auto = false;  // plan_auto per transfer instead of `reshard`
  /// Stage transfers on streams of their own, overlapping the passes (the
  /// default). false: each transfer holds both ends, as communication on
  /// the compute stream does (Alpa without its overlapping): it runs on
  /// stream 0 of both ends, so a GPU's transfers and passes run one at a
  /// time; it starts once its pass and the pass before its reader are
  /// done, and its sender runs nothing more until it ends (blocking_play).
  bool overlap = true;
  reshard::Balance balance = reshard::Balance::host_size;
  int first_gpu = 0;
  /// GPUs each host lends the ranks, from first_gpu's position in its host
  /// on (Alpa's virtual mesh of hosts × devices per host); 0: every GPU, in
  /// the topology's order.
  int gpus_per_host = 0;
  /// Payloads the runtime can verify: each stage transfer keeps its
  /// resharding plan's regions, with its own tensor and buffers per
  /// microbatch; every all-reduce gets a sum payload (plan/builder.h). The
  /// simulator ignores them; they make the plan larger and slower to build.
  bool payloads = false;
  /// What each GPU keeps beyond the model's tensors (model/memory.h): a
  /// layout fits when its memory and this stay within the GPU's.
  Bytes memory_reserve = model::kDefaultReserve;
  [[nodiscard]] double usable_memory(double capacity) const {
    return capacity > 0 ? capacity - static_cast<double>(memory_reserve.count()) : 0;
  }
  friend auto operator<=>(const PipelineConfig&, const PipelineConfig&) = default;
};

}  // namespace meshsim::pipeline
