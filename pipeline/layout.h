#pragma once
// The steps of laying a model out on a pipeline that involve no plan tasks
// (pipeline_plan.h describes the whole): which GPU holds which rank, how
// layers split into virtual stages, which tensors cross stages, what one
// pass costs, and the memory each pipeline device holds.

#include <vector>

#include "model/model.h"
#include "pipeline/config.h"
#include "pipeline/schedule.h"
#include "pipeline/stages.h"
#include "sim/compute_model.h"
#include "topology/topology.h"

namespace meshsim::pipeline {

/// Megatron's rank order over the topology's GPUs from cfg.first_gpu (on
/// cfg.gpus_per_host GPUs of each host when it is set).
class PipelineRanks {
 public:
  /// UsageError when the GPUs run past the topology's or one lacks a
  /// compute model (in `device_models` or built in).
  PipelineRanks(const topology::Topology& topo, const PipelineConfig& cfg,
                const std::vector<sim::DeviceModel>& device_models);
  /// The GPU of tensor rank t, data replica d, pipeline device p.
  [[nodiscard]] topology::NodeId gpu(int t, int d, int p) const;
  [[nodiscard]] const std::string& name(int t, int d, int p) const;
  /// The compute model of the first GPU: the one the ideal schedule is timed with.
  [[nodiscard]] const sim::DeviceModel& device_model() const { return *model_; }
  /// Per pipeline device, its dp·tp GPU names in rank order.
  [[nodiscard]] std::vector<std::vector<std::string>> stage_gpus() const;
  /// What a user should know of where the ranks land, one sentence each:
  /// GPUs of the topology the layout leaves idle, and tensor-parallel
  /// groups that span hosts (their all-reduces then cross the network).
  [[nodiscard]] std::vector<std::string> placement_notes() const;

 private:
  const topology::Topology& topo_;
  PipelineConfig cfg_;
  std::vector<topology::NodeId> gpus_;  // in rank order
  const sim::DeviceModel* model_ = nullptr;
};

/// The hosts `cfg`'s ranks span from the topology's first host, through
/// the host of its last GPU (at most every host: PipelineRanks refuses a
/// configuration past them); what a placement places.
[[nodiscard]] int job_hosts(const topology::Topology& topo, const PipelineConfig& cfg);

/// `stages` contiguous virtual stages starting at the layers `starts`
/// names, or balancing forward FLOPs (balanced_split) when it is empty;
/// `stage_of` gets each layer's stage.
[[nodiscard]] std::vector<VirtualStage> split_stages(const model::Model& model, int stages,
                                                     const model::ActivationOptions& act,
                                                     std::vector<int>& stage_of,
                                                     const std::vector<int>& starts = {});

/// The schedule's ops per pipeline device; UsageError for a configuration
/// that no plan can have (the schedule's own checks, too few layers, a
/// tensor degree the model cannot split, a bad stage split, zb-h1 with
/// recomputation).
[[nodiscard]] std::vector<std::vector<PipelineOp>> checked_ops(const model::Model& model,
                                                               const model::ParallelConfig& cfg);

/// UsageError unless `starts` is empty or names the first layer of each of
/// `stages` stages: `stages` values from 0, strictly rising, below `layers`.
void check_stage_starts(const std::vector<int>& starts, int stages, int layers);

/// Every tensor that crosses from a virtual stage to a later one, in layer
/// order, each destination stage once, shape [microbatch_size, output...]:
/// one context-parallel rank's, its output's first (sequence) dimension ÷
/// `cp`.
[[nodiscard]] std::vector<StageTransfer> stage_transfers(const model::Model& model,
                                                         const std::vector<int>& stage_of,
                                                         int microbatch_size, int cp = 1);

/// What one pass of virtual stage `vs` asks of one tensor rank: FLOPs
/// (b · stage FLOPs / tp; B = 2F, or F when the backward is split into B
/// and W; with recomputation B also repeats the forward, + F) and memory
/// traffic (the stage's weights / tp).
struct PassCost {
  double flops = 0;
  Bytes bytes;
};
[[nodiscard]] PassCost pass_cost(const VirtualStage& vs, Pass pass, int microbatch_size, int tp,
                                 bool split_backward, bool recompute);

/// Each virtual stage's pass times without communication, on one GPU of
/// model `dm`: the kernels of pipeline_kernels.h where the model has them,
/// else pass_cost's FLOPs and bytes as one roofline kernel.
[[nodiscard]] std::vector<PassTimes> ideal_pass_times(const std::vector<VirtualStage>& stages,
                                                      const model::ParallelConfig& cfg,
                                                      const sim::DeviceModel& dm, const model::Model& model);

/// Weights, training state and the peak of activations in flight on each
/// pipeline device, walking its op order (a forward holds its chunk's
/// activations until its backward, or its W when the backward is split).
/// With recomputation a forward holds only its checkpoints, and the peak
/// adds one microbatch's largest layer activations, rebuilt by a backward.
[[nodiscard]] std::vector<DeviceMemory> device_memory(const model::Model& model,
                                                      const std::vector<VirtualStage>& stages,
                                                      const std::vector<std::vector<PipelineOp>>& ops,
                                                      const model::ParallelConfig& cfg);

/// Parameter bytes of virtual stage `vs` on one of its tp tensor ranks: the
/// layers split by channels ÷ tp, those split by batch whole.
[[nodiscard]] double rank_param_bytes(const VirtualStage& vs, int tp, int ep = 1);

/// The stage of layers [first, end) of `vs`: their forward FLOPs and
/// parameters (experts' and those split by batch apart) and their splits.
[[nodiscard]] VirtualStage layer_range(const model::Model& model, const VirtualStage& vs, int first, int end);

/// The layers of `vs` in the gradient buckets a data-parallel framework
/// reduces them in (Megatron-Core's DDP buckets): from its last layer
/// back, whole layers until a bucket holds at least
/// cfg.grad_bucket_params() of one rank's parameters (÷ tp, experts ÷
/// tp·ep). Bucket 0 holds the last layers, whose gradients a backward makes
/// first; each is the layer_range of its layers.
[[nodiscard]] std::vector<VirtualStage> grad_buckets(const model::Model& model, const VirtualStage& vs,
                                                     const model::ParallelConfig& cfg);

/// split_stages for `cfg`, then each layer's split over the tensor ranks
/// (choose_layer_splits) within GPUs of `capacity` bytes (0: no limit).
[[nodiscard]] std::vector<VirtualStage> laid_out_stages(const model::Model& model,
                                                        const model::ParallelConfig& cfg,
                                                        const std::vector<std::vector<PipelineOp>>& ops,
                                                        std::vector<int>& stage_of, double capacity);

/// UsageError when the iteration's plan would pass plan::kMaxPlanTasks:
/// every pass is a compute task per replica, and with tensor parallelism
/// an all-reduce too (transfers come on top). Checked by checked_ops
/// before the schedule is made.
void refuse_huge_plan(const model::ParallelConfig& cfg);

/// The memory that building and simulating the iteration's plan holds, as
/// refuse_huge_plan estimates it (per task, at its least count of tasks).
[[nodiscard]] double plan_bytes(const model::ParallelConfig& cfg);

}  // namespace meshsim::pipeline
