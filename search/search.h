#pragma once
// Parallel-strategy search (after DistIR's grid search): every training
// configuration of a space is built as the same Plan `meshsim pipeline`
// builds and simulated in full, in parallel threads; configurations whose
// memory estimate exceeds the GPU's memory are filtered out before
// simulation.
//
// The space, for a model on G GPUs of a topology and a global batch B:
//   tp    divides G, at most the GPUs of one host unless tp_across_hosts
//   cp    in `cp`, dividing G / tp (above 1 only with fused attention and
//         a sequence of 2·cp equal chunks: model::check_context_parallel)
//   pp    divides G / (tp · cp), at most the model's layers
//   dp    = G / (tp · cp · pp), dividing B
//         (each of the three only among `tp`, `pp`, `dp` when those are given)
//   microbatch size m in `microbatch_sizes` dividing B / dp
//         (microbatches = B / (dp · m))
//   schedule in `schedules` (interleaved-1f1b with each of
//         `virtual_stages` > 1, the others with 1)
//   recomputation in `recompute` (none, selective, full; zb-h1 with full
//         is invalid)
//   sequence parallelism in `sequence_parallel` (true only with tp > 1)
//   ZeRO stage in `zero` (above 0 only with dp > 1)
//   fused attention in `flash_attention`
//   expert parallelism in `ep` (MoE models; those dividing dp·cp and the experts)
//   stage transfer in `reshards`
// (pipeline/config.h and docs/training.md say what each does.)
// A configuration is "simulated", "out_of_memory" (some GPU's estimate,
// DeviceMemory::total, exceeds its memory) or "invalid" (build_pipeline
// refuses it; the reason is kept). Results come in enumeration order
// whatever the thread count, so a search's CSV is the same byte for byte.
//
// Configurations that build the same plan share one simulation
// (plan_class): without stage transfers (pp = 1) the stage-transfer
// strategy names nothing that moves, and with one GPU per stage (tp = 1)
// every strategy that moves the tensor moves it as one send, so the
// strategies of such a configuration differ in name only. ZeRO-2 builds
// ZeRO-1's plan (the same collectives; only the memory differs), unless the
// model's layers list their kernels (their split over the tensor ranks
// depends on the memory left). Each configuration keeps its own memory
// verdict. Each thread also keeps, from one configuration to the next, the
// resharding plans of the stage transfers and the shapes of the
// collectives it has worked out (pipeline::TransferPlans, sim::RunCache):
// configurations of other layouts repeat many of them.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"
#include "pipeline/iteration.h"

namespace meshsim::search {

struct Space {
  int gpus = 0;  // 0: every GPU of the topology
  int global_batch = 0;
  std::vector<int> microbatch_sizes{1, 2, 4, 8};
  std::vector<model::Schedule> schedules{model::Schedule::one_f_one_b};
  std::vector<int> virtual_stages{2};  // for interleaved-1f1b
  std::vector<reshard::Strategy> reshards{reshard::Strategy::broadcast};
  std::vector<model::Recompute> recompute{model::Recompute::none};
  std::vector<bool> sequence_parallel{false};
  std::vector<model::ZeroStage> zero{model::ZeroStage::none};
  std::vector<bool> flash_attention{false};
  std::vector<int> ep{1};
  std::vector<int> cp{1};
  std::vector<int> tp, pp, dp;  // empty: every degree that fits
  bool tp_across_hosts = false;
  Bytes memory_reserve = model::kDefaultReserve;  // kept free on every GPU (model/memory.h)
  Time host_per_kernel{};  // the framework's, every configuration's (parallel_config.h)
  bool fp8 = false;        // FP8 weight GEMMs, every configuration's
  // Overlap as the frameworks run it (parallel_config.h), every configuration's.
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;  // for those under ZeRO-1 and 2
  bool tp_comm_overlap = false;       // for those with tp > 1
};

/// A value one of the space's lists holds twice: every configuration with
/// it would be searched twice. `list` is the member's name
/// ("microbatch_sizes", "virtual_stages", "schedules", "reshards",
/// "recompute", "sequence_parallel", "zero", "flash_attention", "ep", "cp",
/// "tp", "pp", "dp"), `index` the repeat's place in it.
struct RepeatedValue {
  std::string list;
  std::size_t index = 0;
  std::string value;
};
/// The first repeated value of `s`'s lists, if any. Space files and the
/// search command both refuse one, each naming it in its own terms.
[[nodiscard]] std::optional<RepeatedValue> repeated_value(const Space& s);

/// UsageError when the space is empty or malformed (no batch, more GPUs
/// than the topology has).
[[nodiscard]] std::vector<pipeline::PipelineConfig> enumerate(const Space& s, const model::Model& m,
                                                              const topology::Topology& t);

enum class Status { simulated, out_of_memory, invalid };
[[nodiscard]] std::string_view to_string(Status s);

/// What a search keeps of a simulated iteration (pipeline_metrics).
struct Metrics {
  double iteration_s = 0;
  double samples_per_s = 0;
  double tflops_per_gpu = 0;
  double bubble = 0;
  double exposed_comm_s = 0;
};

struct Result {
  pipeline::PipelineConfig config;
  Status status = Status::invalid;
  std::string reason;            // invalid: why
  double peak_memory_bytes = 0;  // the largest per-GPU estimate (0 if invalid)
  Metrics metrics;               // simulated only
};

struct Options {
  int threads = 1;
  /// Evaluate a configuration once per plan_class (false: every one, for
  /// tests that check the sharing changes nothing).
  bool share_equal_plans = true;
  /// Called once per finished configuration with its index into `configs`,
  /// from one thread at a time (under a lock), in completion order.
  std::function<void(std::size_t, const Result&)> on_result;
  std::vector<sim::DeviceModel> device_models;  // compute models (see apply_compute_efficiency)
  double memory_capacity = 0;                   // bytes per GPU; 0: no filter
};

/// The configuration with the same plan that stands for c: c with the
/// first strategy among those that build it (send-recv when the strategy
/// is immaterial, see above); with `memory_only` also with ZeRO-1 for
/// ZeRO-2.
[[nodiscard]] pipeline::PipelineConfig plan_class(pipeline::PipelineConfig c, bool memory_only = false);

/// Every configuration, in order; `progress` (may be empty) is called from
/// the calling thread with (done, total) as results come in.
[[nodiscard]] std::vector<Result> run(const std::vector<pipeline::PipelineConfig>& configs,
                                      const model::Model& m, const topology::Topology& t, const Options& o,
                                      const std::function<void(std::size_t, std::size_t)>& progress = {});

/// Indices of the simulated results, fastest first (ties: enumeration order).
[[nodiscard]] std::vector<std::size_t> ranking(const std::vector<Result>& results);

/// A configuration's iteration time with every compute figure at the slow
/// and at the fast end of its spread (sim/profiles.h); 0 at an end where it
/// did not simulate.
struct Band {
  double slow_s = 0;
  double fast_s = 0;
};

/// The bands of configurations run at the slow end (`at_slow`) and at the
/// fast end (`at_fast`) of the spreads, in the same order.
[[nodiscard]] std::vector<Band> bands(const std::vector<Result>& at_slow, const std::vector<Result>& at_fast);

/// Whether the prediction cannot tell `other` from `winner`: their bands
/// overlap (other's fast end at or below the winner's slow end).
[[nodiscard]] bool ties(const Band& winner, const Band& other);

}  // namespace meshsim::search
