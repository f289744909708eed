#pragma once
// The resharding plan of a stage transfer: a tensor, replicated on the
// tensor ranks of one pipeline device, moved to those of the next
// (reshard/reshard.h plans it), ready for the pipeline builder to stamp out
// once per microbatch.
//
// TransferPlans keeps the plans made, for every later transfer, and every
// later build, that moves the same tensor shape and type between the same
// meshes with the same strategy: plans built one after another over one
// topology share them. A caller that builds many plans (a search, per
// thread) keeps one and passes it to build_pipeline_into; without one a
// build keeps its own. It is emptied before a build over another topology
// object (told apart by address: a topology must stay alive and unchanged
// while a cache filled over it is in use) and once it holds kMaxPlans
// plans (so a long search's memory stays bounded). Not for two builds at
// once.

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/hash.h"
#include "pipeline/config.h"
#include "plan/plan.h"
#include "reshard/reshard.h"
#include "topology/topology.h"

namespace meshsim::pipeline {

struct TransferPlan {
  plan::Plan fragment;             // its tasks' roots wait for the producing pass when stamped
  std::vector<std::string> ids;    // its tasks' ids (kept apart: a stamp writes its own)
  std::vector<std::size_t> sinks;  // tasks nothing inside the plan depends on
  std::string strategy;            // what planned it (auto: what auto chose)
};

class TransferPlans {
 public:
  static constexpr std::size_t kMaxPlans = 4096;

  /// Ready for a build over `t`. Before a build only: a build keeps
  /// references to the plans.
  void fit(const topology::Topology& t);
  /// The plan of moving prob's tensor, replicated, from prob.src to
  /// prob.dst as `cfg` says (its strategy or auto, balance, payloads),
  /// over the topology of the last fit().
  const TransferPlan& plan(reshard::ReshardProblem prob, const PipelineConfig& cfg);
  /// The distinct transfers whose plans it holds.
  [[nodiscard]] std::size_t size() const { return plans_.size(); }

 private:
  const topology::Topology* topo_ = nullptr;  // what they were made over
  // By (backward?, dtype, strategy, auto?, balance, payloads?, shape, -1, source GPUs, -1, destination GPUs).
  std::unordered_map<std::vector<std::int64_t>, TransferPlan, WordsHash> plans_;
  std::vector<std::int64_t> key_;  // scratch
};

}  // namespace meshsim::pipeline
