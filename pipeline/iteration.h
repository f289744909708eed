#pragma once
// One training iteration of a pipeline-, tensor- and data-parallel model as
// a Plan (docs/design.md: the simulator scores it, the runtime can run it).
//
// Ranks (Megatron's order): rank = t + tp·(d + dp·cp·p) for tensor rank t,
// replica d = c + cp·(data replica) with context rank c, and pipeline
// device p, taken over the topology's GPUs from `first_gpu`; so a
// tensor-parallel group is tp consecutive GPUs (one host when tp divides
// the host), a context group cp tensor groups side by side, and stage p
// holds dp·cp·tp consecutive GPUs. The dp·cp replicas hold the same
// weights; where the data replicas are meant alone (the global batch, a
// context group's count) it says dp.
//
// Layers: pp·v contiguous virtual stages, split to minimise the largest
// stage's forward FLOPs (ties: the earlier split); virtual stage s runs on
// pipeline device s mod pp (chunk s / pp), as in Megatron's interleaving.
//
// Per pass (F, B, W of a microbatch on a virtual stage) and data replica:
//   compute      one task per tensor rank: FLOPs = b · stage FLOPs / tp
//                (B = 2F, or B = W = F under zb-h1; recomputation adds F
//                to B), memory traffic = the stage's weights / tp; stream 0
//   tp all-reduce one ring all-reduce over the tensor group after the
//                compute, of all the pass's all-reduce bytes (2 per
//                transformer layer of b·s·h elements, forward and B, B
//                twice that with recomputation; none for W; a layer
//                list's from its layers split by channels and its
//                gathers, layer_split.h); stream 0: Megatron's
//                all-reduces block compute. With sequence parallelism an
//                all-gather then a reduce-scatter of those bytes instead
//   transfers    every tensor that crosses from a virtual stage to a later
//                one (the stage's output; a layer-list model's skip
//                connections too) goes, per microbatch, through the
//                resharding planner: shape [b, output shape], replicated
//                (R) over the tensor group on both sides, with the chosen
//                strategy and balancing; gradients come back the same way.
//                Forward transfers out of virtual stage s use stream
//                1 + s mod 2, backward ones stream 3 + s mod 2, so what a
//                stage sends never queues behind what it receives; without
//                overlap, stream 0 (the compute stream)
//   dp all-reduce per (device, chunk, tensor rank), a ring over the dp
//                replicas of the chunk's gradients (params / tp, model
//                dtype), once that chunk's last backward (or W) on the GPU
//                is done; stream 5, so it overlaps the passes still to run.
//                Layers split by batch: one all-reduce of their gradients
//                over all the chunk's tp·dp GPUs instead. Under ZeRO (any
//                stage) a reduce-scatter of those bytes instead, and after
//                the optimizer steps an all-gather of the updated weights
//                (stream 5)
//   optimizer    one memory-bound task per GPU after its all-reduces: Adam
//                with fp32 master weights reads and writes 28 bytes per
//                parameter, of the GPU's parameters (÷ dp under ZeRO)
//   experts      with expert parallelism (ep > 1), before each F and B pass
//                of a stage with MoE layers, per group of ep consecutive
//                replicas and tensor rank, one all-to-all over the group of
//                the pass's token dispatch and combine (2·b·s·k·h elements
//                per MoE layer, ÷ tp with sequence parallelism; B twice
//                with full recomputation), on stream 0 once every member's
//                inputs have arrived: Megatron's all-to-alls block compute.
//                The experts' gradients are reduced over the dp/ep
//                replicas that hold the same experts, apart from the rest
//   context      with context parallelism (cp > 1), before each F and B
//                pass, per context group and tensor rank, an all-gather over
//                the group of the stage's keys and values (b·Σ 2·s·g·d per
//                layer ÷ tp; twice in a B with full recomputation), and in B
//                then a reduce-scatter of their gradients, on stream 7 once
//                every member's inputs have arrived: beside the pass, whose
//                tensor collectives and transfers (and the gradient
//                reduction) wait for them
//   buckets      with overlap_grad_reduce, a chunk's last B (or W) is one
//                compute task per gradient bucket (grad_buckets: its last
//                layers first), and each bucket's reduction waits for its
//                own; with overlap_param_gather (ZeRO-1/2) the weight
//                all-gathers, per stage, bucket and tensor rank, come first
//                in the plan with nothing before them, and each chunk's
//                first F runs bucket by bucket (first layers first), each
//                after its gathers
//   tp overlap   with tp_comm_overlap, a pass's tensor collectives on stream
//                8 from the compute's start, beside it
//   ZeRO-3       before each F and B pass, per tensor rank, an all-gather
//                over the replicas of the stage's weights (÷ tp), on stream
//                6, waiting for the pass before the previous one: gathered
//                one pass ahead, as FSDP prefetches (FSDP gathers layer by
//                layer; one gather per pass moves the same bytes)
// Tasks are emitted in the order of an ideal play of the schedule (no
// communication), a topological order, so per-stream order never deadlocks.
// The steps without tasks (ranks, stage split, transfers, pass costs,
// memory) are in pipeline_layout.h.
//
// Memory per pipeline device: weights, gradients and Adam state (per
// parameter ÷ tp, sharded over dp by the ZeRO stage: model/memory.h; under
// ZeRO-3 also two layers' gathered weights) plus activations in flight:
// the op order is walked, a forward holding b · Σ activation_bytes(layer,
// activation options) of its chunk until its backward (its W under zb-h1)
// frees them. With full recomputation a forward holds b · Σ its layers'
// input bytes instead, and the peak adds b · the largest layer's
// activations (rebuilt in a backward).
// Recomputation with zb-h1 is refused: its W passes need the activations
// the backward would have rebuilt and dropped.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"
#include "pipeline/config.h"
#include "pipeline/schedule.h"
#include "pipeline/stages.h"
#include "pipeline/transfer_plans.h"
#include "plan/plan.h"
#include "sim/compute_model.h"
#include "sim/executor.h"
#include "topology/cost.h"
#include "topology/topology.h"

namespace meshsim::pipeline {

struct PipelineIteration {
  plan::Plan plan;
  PipelineConfig config;
  std::vector<VirtualStage> stages;
  std::vector<StageTransfer> transfers;
  std::vector<DeviceMemory> memory;                  // per pipeline device
  std::vector<std::vector<std::string>> stage_gpus;  // per pipeline device, its dp·tp GPU names
  double model_flops = 0;                            // per iteration: 3 × forward FLOPs × global batch
  double peak_flops = 0;    // a GPU's dense datasheet peak for the model's dtype (the MFU's denominator)
  double ideal_bubble = 0;  // of the schedule played with the compute times alone
  double ideal_makespan_s = 0;
  std::int64_t global_batch = 0;
  double tokens = 0;  // per iteration: global batch × the model's sequence (0: a layer list has none)
  std::vector<std::string> placement_notes;  // PipelineRanks::placement_notes
  // Task categories, for the exposed-communication breakdown.
  enum class Kind : std::uint8_t {
    compute,
    tp_allreduce,
    stage_transfer,
    dp_allreduce,
    optimizer,
    expert_alltoall,
    context_exchange
  };
  std::vector<Kind> task_kind;  // per plan task
};

/// UsageError when the configuration does not fit: GPUs beyond the
/// topology, fewer layers than virtual stages, degrees below 1, a GPU
/// without a compute model, or a schedule/microbatch mismatch.
[[nodiscard]] PipelineIteration build_pipeline(const model::Model& model, const topology::Topology& topo,
                                               const PipelineConfig& cfg,
                                               const std::vector<sim::DeviceModel>& device_models = {});
/// build_pipeline into `it`, whose tasks' storage (ids, device and
/// dependency lists) the new plan reuses: for callers that build many
/// plans one after another (a search, per thread).
/// `shared` (may be null): transfer plans shared with earlier builds.
void build_pipeline_into(PipelineIteration& it, const model::Model& model, const topology::Topology& topo,
                         const PipelineConfig& cfg, const std::vector<sim::DeviceModel>& device_models = {},
                         TransferPlans* shared = nullptr);

/// The memory each pipeline device of `cfg` holds (as build_pipeline's
/// `memory`), without building the plan; UsageError as build_pipeline for a
/// schedule/microbatch mismatch or fewer layers than stages.
/// `capacity`: bytes per GPU the layer splits must fit (0: no limit).
[[nodiscard]] std::vector<DeviceMemory> pipeline_memory(const model::Model& model,
                                                        const model::ParallelConfig& cfg,
                                                        double capacity = 0);

struct PipelineMetrics {
  double iteration_s = 0;
  double samples_per_s = 0;
  double tflops_per_gpu = 0;  // model FLOPs (no recomputation) per GPU per second
  double mfu = 0;             // model FLOPs utilisation: tflops_per_gpu / the GPU's dense peak (0 to 1)
  // Bubble ratio, as Megatron-LM defines it ((p - 1)/m for GPipe with equal
  // stages): mean over pipeline GPUs of idle time / pass time, where idle
  // is the iteration less the GPU's passes (its optimizer step excluded).
  double bubble = 0;
  double ideal_bubble = 0;   // the same ratio of the schedule alone, without communication
  double idle_fraction = 0;  // mean over pipeline GPUs of idle time / iteration time (0 to 1)
  // Time on the critical path, by kind; exposed communication = the last three.
  double critical_compute_s = 0;
  double critical_tp_s = 0;
  double critical_transfer_s = 0;
  double critical_dp_s = 0;
  double critical_optimizer_s = 0;
  double critical_ep_s = 0;  // the expert-parallel all-to-alls
  double critical_cp_s = 0;  // the context-parallel key/value exchanges
  // What the iteration costs: the job's price and power (topology/cost.h),
  // per step and per million tokens.
  topology::JobCost job;
  topology::StepCost cost;
  [[nodiscard]] double exposed_comm_s() const {
    return critical_tp_s + critical_transfer_s + critical_dp_s + critical_ep_s + critical_cp_s;
  }
};

[[nodiscard]] PipelineMetrics pipeline_metrics(const PipelineIteration& it, const topology::Topology& topo,
                                               const sim::SimResult& r);

/// Contiguous split of `costs` into `parts` non-empty ranges minimising the
/// largest sum; returns the part boundaries (parts + 1 entries, first 0,
/// last costs.size()). UsageError when there are fewer costs than parts.
[[nodiscard]] std::vector<int> balanced_split(const std::vector<double>& costs, int parts);

}  // namespace meshsim::pipeline
