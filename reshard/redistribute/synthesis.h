#pragma once
// Synthesis of a redistribution as a sequence of typed steps, and the
// XLA-style baseline beside it.
//
// synth. A shortest path over the types that fit the tensor
// (reshard/redistribute/types.h), each edge a step (Rink et al.'s four, and
// the direct exchange unless left out) weighted by the time the
// simulator gives that step alone on the topology (a slice: 0), searched
// over (mesh side, type, size of the buffer held). Between two meshes the
// search starts on the source mesh, may take steps there, crosses once by
// a move to any type of the destination mesh, and may take steps there.
// A step is allowed only if the buffer it writes is at most M = max(source
// tile, destination tile) and, under a memory limit, if input + output fit
// the limit. Under a network budget, the bytes the steps send into the
// fabric (each step simulated alone, ring forwarding included) add up to at
// most the budget: the search keeps, per state, every (time, bytes) label
// no other label there beats on both, and takes labels in order of time,
// so the first one to reach the destination type is the fastest sequence
// within the budget. Ties go to fewer steps, then to the first found
// (deterministic).
//
// Memory guarantee: every buffer held between steps is <= M, so the peak
// per device is <= M + W <= 2M, W the largest buffer one step writes
// (reshard/redistribute/program.h). Some sequence within the bound always
// exists with the exchange (or, between two meshes, the move): one step
// straight from source to destination reads the source tile and writes
// the destination tile, both <= M. With Rink's four steps alone on one
// mesh, one exists when the type that uses every axis of the source and of
// the destination fits the tensor in some arrangement (true whenever every
// dimension divides by the mesh size): slice the destination's axes the
// source lacks (the buffer shrinks to the smallest, L(U_src ∪ U_dst));
// permute so that in each dimension the axes that must leave it are last;
// move each with an all-to-all to the end of its destination dimension;
// permute into the destination's order with the source-only axes last;
// gather those (the buffer grows to the destination tile). Every buffer on
// the way is between L(U_src ∪ U_dst) and M: Rink et al.'s "valley" of
// slices, then all-to-alls and permutes, then gathers. The search returns
// the fastest sequence within the bound, never slower (as the sum of its
// steps' times) than those. When no sequence fits (a memory limit, or an
// awkward shape for Rink's steps), synthesis throws UsageError saying so.
//
// xla. XLA's SPMD partitioner: nothing when the types agree; a local slice
// when the destination only refines the source (each dimension's source
// axes a prefix of its destination axes); one permute when every
// dimension keeps its shard count; one all-to-all when a single all-to-all
// step leads there; an all-gather of just the dropped axes (one per
// dimension) when the source refines the destination (partial
// replication); otherwise an all-gather of every split dimension (all of
// its axes at once) to full replication, then a local slice.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reshard/redistribute/program.h"

namespace meshsim::reshard::redistribute {

/// The simulated time of single steps on one topology, pair of meshes and
/// tensor, cached across the problems that share them.
class StepTimer {
 public:
  StepTimer(const topology::Topology& t, const Problem& p);
  struct Cost {
    Time time;
    double network_bytes = 0;  // sent into the fabric (nic_traffic)
  };
  /// `s` applied to type `from` (on the destination mesh after a move),
  /// simulated alone (a slice costs nothing).
  Cost cost(bool dst_side, const ShardingSpec& from, const Step& s);
  /// Each step of a sequence from `from` on the source mesh.
  std::vector<Cost> costs(const ShardingSpec& from, const std::vector<Step>& steps);
  /// Their bytes into the fabric, added up.
  double network_bytes(const ShardingSpec& from, const std::vector<Step>& steps);
  [[nodiscard]] std::size_t simulations() const { return simulations_; }
  /// Whether this timer serves `p` (same meshes and tensor).
  [[nodiscard]] bool serves(const Problem& p) const;

 private:
  const topology::Topology& topo_;
  Problem base_;
  std::map<std::string, Cost> cache_;
  std::size_t simulations_ = 0;
};

/// UsageError when no sequence meets M (and `memory_limit`, and
/// `network_budget` bytes into the fabric). Without `exchange`, only
/// Rink et al.'s steps (slice, all-gather, all-to-all, permute).
[[nodiscard]] std::vector<Step> synthesize(const Problem& p, StepTimer& timer,
                                           std::optional<Bytes> memory_limit = std::nullopt,
                                           std::optional<double> network_budget = std::nullopt,
                                           bool exchange = true);
[[nodiscard]] std::vector<Step> xla_style(const Problem& p);

}  // namespace meshsim::reshard::redistribute
