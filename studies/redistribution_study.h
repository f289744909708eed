#pragma once
// Redistribution study files (`meshsim.redistribution-study/1`): for each
// group (a machine, a mesh on it and a tensor), every (source, destination)
// pair of sharding types that fit the tensor is planned with synth, rink
// and XLA-style (reshard/redistribute/evaluate.h), simulated, and verified
// at a small size.
//
// {"format": "meshsim.redistribution-study/1", "name": ..., "description": ...,
//  "groups": [{"name": ..., "machine": {cluster form of a topology file:
//               "host", "hosts", "fabric", ...},
//              "mesh": "hosts=0-1" (a mesh selector),
//              "tensor": "8192x8192:bfloat16" (simulated),
//              "verify_tensor": "64x64:bfloat16" (same rank; every type
//                                that fits "tensor" must fit it too)}]}
//
// Speedup of a pair = XLA-style time / synth (or rink) time, over the
// pairs where XLA-style moves data (elsewhere all only slice, in no time).
// Rows come per pair: synth, rink (when Rink's steps find a sequence), xla.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "plan/plan.h"
#include "reshard/redistribute/evaluate.h"
#include "studies/study.h"
#include "topology/cluster.h"

namespace meshsim::studies {

struct StudyGroup {
  std::string name;
  topology::ClusterSpec machine;
  std::string mesh;
  std::string tensor, verify_tensor;
};

struct RedistStudy {
  std::string name, description;
  std::vector<StudyGroup> groups;
};

/// ConfigError with the JSON path on any mistake, including meshes and
/// tensors that do not fit their machine.
[[nodiscard]] RedistStudy load_redistribution_study(const JsonCursor& root);
/// The registry's loader (studies/study.h): verifies each plan on the host runtime.
[[nodiscard]] std::unique_ptr<Study> redistribution_study_kind(const JsonCursor& root);

struct StudyPairRow {
  std::string group, src, dst;
  reshard::redistribute::Strategy strategy = reshard::redistribute::Strategy::synth;
  double time_s = 0, lower_bound_s = 0;
  std::size_t steps = 0;
  double moved_bytes = 0, network_bytes = 0, peak_memory_bytes = 0, max_shard_bytes = 0;
  double memory_bound_bytes = 0;  // M + the largest buffer one step writes
  std::optional<bool> verified;   // at verify_tensor's size
  double speedup = 0;             // synth and rink rows: XLA-style time / this time (0: not defined)
};

struct GroupSummary {
  std::string group;
  std::size_t pairs = 0, compared = 0, verified = 0, plans = 0;
  double geomean_speedup = 0, max_speedup = 0, min_speedup = 0;
  std::string max_pair, min_pair;
  double rink_geomean_speedup = 0, rink_max_speedup = 0;  // Rink's steps alone
  std::string rink_max_pair;
  std::size_t synth_slower = 0;       // pairs where synth is slower than XLA-style
  std::size_t more_network = 0;       // synth and rink plans that send more into the fabric than XLA-style
  std::size_t over_memory_bound = 0;  // synth and rink plans whose peak exceeds their bound
  double synth_peak_over_m = 0, xla_peak_over_m = 0;  // the largest peak / M of each
};

/// `verify` runs a plan and says whether every byte arrived. `progress` (may
/// be empty) is called with (pairs done, pairs in all).
[[nodiscard]] std::vector<StudyPairRow> run_redistribution_study(
    const RedistStudy& s, const std::function<bool(const plan::Plan&)>& verify,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

/// Per group, then one summary of every group together (group "all").
[[nodiscard]] std::vector<GroupSummary> summarise(const RedistStudy& s,
                                                  const std::vector<StudyPairRow>& rows);

/// The rows as results.csv and results.json list them.
[[nodiscard]] Results redistribution_results(const std::vector<StudyPairRow>& rows);

}  // namespace meshsim::studies
