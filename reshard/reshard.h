#pragma once
// Cross-mesh resharding (Alpa, MLSys 2023): move a tensor sharded
// as `src_spec` on mesh `src` to `dst_spec` on mesh `dst`.
//
// Unit tasks: for every distinct destination tile and every distinct source
// tile, their non-empty intersection is one unit task: (slice, candidate
// senders = every source device holding that source tile, receivers = every
// destination device holding that destination tile).
//
// Strategies, each a Plan (tasks on stream 0 of their devices, so tasks
// that share a device run in plan order):
//   send-recv   one send per (unit task, receiver)
//   allgather   Alpa's send/recv + local all-gather, under Alpa's rule: it
//               applies only when the destination spec splits the tensor
//               over mesh axis 0 into at least as many pieces as the
//               destination mesh has hosts (else the plan is send-recv).
//               Then each destination tile's replicas are told apart by
//               splitting the tile: dimension by dimension, in order, by
//               gcd(replicas left, the tile's extent there), until no
//               replica is left or the dimensions run out. Each receiver
//               is sent only its part (one send per part and source tile),
//               and an all-gather over the replicas that hold different
//               parts rebuilds the tile; replicas the split could not tell
//               apart receive their part twice, as Alpa's would
//   broadcast   one pipelined broadcast per unit task, the chain visiting
//               receivers host by host, so the slice enters each host once
//   scatter     each unit task cut into as many parts as it has source
//               replicas (or as its largest host has receivers, whichever
//               is more; never more than its largest extent) along its
//               largest dimension; part k is broadcast from replica k
//               along a chain that enters every destination host at its
//               (k mod n)-th receiver and visits the hosts in an order
//               turned by k. The parts leave through different source
//               NICs and enter through different destination NICs, and
//               the chains' NVLink hops are the all-gather that completes
//               each receiver's slice, pipelined with the network
//   signal      the broadcast plan moving 1 byte per task: the
//               "communication is free" bound (no payload)
// A plan is made of jobs: send-recv has one per (unit task, receiver),
// broadcast and signal one per unit task, scatter one per part, allgather
// one per (part, source tile). Each job gets one sender; balancing
// chooses them. A job occupies the NICs its chain crosses the network
// through (its sender's, and those its chain enters and leaves each
// other host by); on hosts with one NIC that is the host:
//   none        the first candidate (for scatter, replica k), jobs in order
//   device      the candidate that has sent the fewest bytes so far
//   host-size   the candidate whose NIC has sent the fewest bytes so far
//               (ties: fewest bytes on the device)
//   host-order  senders and order: rounds of jobs that use disjoint NICs,
//               each round the best of 100 seeded random packings (most
//               jobs, then the most even bytes); a job waits for the
//               previous job on any of its NICs
//   search      depth-first branch-and-bound over (next job, sender) under
//               that NIC-occupancy model (a job lasts bytes / its routes'
//               bottleneck + latency), bounded by each NIC's busy time plus
//               the cheapest durations of the jobs that must use it; starts
//               from host-order and stops after 100,000 search nodes (a
//               node budget, not a clock, keeps plans deterministic)
// A candidate on a receiver's own host is always preferred.
//
// Lower bound: max over hosts of the bytes that must enter (leave) the host
// over the network divided by the host's NIC capacity into (out of) the
// fabric, plus the smallest inter-host route latency.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"
#include "plan/plan.h"
#include "reshard/sharding.h"
#include "topology/mesh.h"
#include "topology/topology.h"

namespace meshsim::reshard {

enum class Strategy { send_recv, allgather, broadcast, scatter, signal };
enum class Balance { none, device, host_size, host_order, search };

inline constexpr EnumNames<Strategy, 5> kStrategyNames{"strategy",
                                                       {{{Strategy::send_recv, "send-recv"},
                                                         {Strategy::allgather, "allgather"},
                                                         {Strategy::broadcast, "broadcast"},
                                                         {Strategy::scatter, "scatter"},
                                                         {Strategy::signal, "signal"}}}};
/// The strategies that move the tensor (all but signal), in table order.
inline constexpr Strategy kMovingStrategies[] = {Strategy::send_recv, Strategy::allgather,
                                                 Strategy::broadcast, Strategy::scatter};
inline constexpr EnumNames<Balance, 5> kBalanceNames{"balance",
                                                     {{{Balance::none, "none"},
                                                       {Balance::device, "device"},
                                                       {Balance::host_size, "host-size"},
                                                       {Balance::host_order, "host-order"},
                                                       {Balance::search, "search"}}}};
[[nodiscard]] inline std::string_view to_string(Strategy s) {
  return kStrategyNames.name(s);
}
[[nodiscard]] inline std::string_view to_string(Balance b) {
  return kBalanceNames.name(b);
}
[[nodiscard]] inline std::optional<Strategy> strategy_from(std::string_view s) {
  return kStrategyNames.parse(s);
}
[[nodiscard]] inline std::optional<Balance> balance_from(std::string_view s) {
  return kBalanceNames.parse(s);
}

struct ReshardProblem {
  plan::Tensor tensor;  // name, shape, dtype
  topology::DeviceMesh src;
  topology::DeviceMesh dst;
  ShardingSpec src_spec;
  ShardingSpec dst_spec;
};

/// The problem of moving `tensor` from `src_mesh` (mesh selector, see
/// topology/mesh.h) sharded as `src_spec` to `dst_mesh` as `dst_spec`;
/// UsageError naming a bad selector or spec.
[[nodiscard]] ReshardProblem make_problem(const topology::Topology& t, plan::Tensor tensor,
                                          const std::string& src_mesh, const std::string& src_spec,
                                          const std::string& dst_mesh, const std::string& dst_spec);

/// "1024x1024x512:int32" (types float32, float16, bfloat16, float64, int32,
/// int8, uint8, or f32, f16, bf16, f64, i32, i8, u8); the tensor is named "x".
/// UsageError naming the bad part.
[[nodiscard]] plan::Tensor parse_tensor_arg(const std::string& text);

struct UnitTask {
  Box slice;
  Bytes bytes;
  std::vector<topology::NodeId> senders;
  std::vector<topology::NodeId> receivers;  // those that need it moved to them
  std::vector<topology::NodeId> local;      // overlapping meshes: receivers that hold it already
};

/// Distinct tiles of a mesh with the devices holding each (row-major), in
/// first-seen order.
[[nodiscard]] std::vector<std::pair<Box, std::vector<topology::NodeId>>> replica_groups(
    const std::vector<std::int64_t>& shape, const ShardingSpec& spec, const topology::DeviceMesh& m);

/// UsageError for uneven splits. Meshes may overlap: a receiver that holds
/// a slice in its own source tile copies it locally (UnitTask::local).
[[nodiscard]] std::vector<UnitTask> unit_tasks(const ReshardProblem& p);

/// A host's NIC capacity into (or out of) the fabric, bytes/s: the sum
/// over its NICs' network links (0 without NICs).
[[nodiscard]] double host_fabric_capacity(const topology::Topology& t, int host);

struct LowerBound {
  Time time;                  // zero when nothing must cross the network
  Bytes max_host_bytes;       // the bytes of the bounding host
  std::string bounding_host;  // and its name, with "in" or "out"
};

[[nodiscard]] LowerBound lower_bound(const topology::Topology& t, const ReshardProblem& p,
                                     const std::vector<UnitTask>& tasks);

struct Job {
  std::size_t task = 0;  // the unit task it moves (a part of)
  Box box;               // what it moves: the task's slice or a part of it
  Bytes bytes;
  std::vector<topology::NodeId> receivers;  // those it serves, in chain order
  std::size_t part = 0;                     // scatter: part k prefers the task's replica k
  std::size_t gather = SIZE_MAX;            // allgather: the all-gather its receiver joins
};

/// allgather: the all-gather that rebuilds a destination tile over replicas
/// that each received one part of it.
struct Gather {
  std::vector<topology::NodeId> members;
  std::vector<Box> parts;  // per member, the part it received
  Box tile;
  Bytes bytes;  // the tile's
};

struct Jobs {
  std::vector<Job> list;
  std::vector<Gather> gathers;
  /// Overlapping meshes: (device, slice) copied from the device's source
  /// buffer to its destination buffer (a send to itself), before the jobs.
  std::vector<std::pair<topology::NodeId, Box>> local;
};

struct Assignment {
  std::vector<std::size_t> order;        // job indices, in plan order
  std::vector<topology::NodeId> sender;  // per job (indexed by job, not by order)
  bool nic_rounds = false;               // jobs wait for the previous job on their NICs
};

[[nodiscard]] Jobs make_jobs(const topology::Topology& t, const ReshardProblem& p, Strategy s,
                             const std::vector<UnitTask>& tasks);

/// A job's chain from `sender`: the sender, then its receivers, those on
/// the sender's host first, host by host in the job's order.
[[nodiscard]] std::vector<topology::NodeId> job_chain(const topology::Topology& t, const Job& j,
                                                      topology::NodeId sender);
/// The NICs a job's chain from `sender` crosses the network through (a
/// GPU without a NIC counts as its host); sorted, distinct.
[[nodiscard]] std::vector<std::int64_t> job_nics(const topology::Topology& t, const Job& j,
                                                 topology::NodeId sender);

[[nodiscard]] Assignment assign_senders(const topology::Topology& t, const std::vector<UnitTask>& tasks,
                                        const Jobs& jobs, Balance b, std::uint64_t seed = 1);
/// The plan of an assignment. Without `payload` it has tasks only (no
/// tensor, buffers or regions): what the simulator needs to score it.
[[nodiscard]] plan::Plan emit_plan(const topology::Topology& t, const ReshardProblem& p, Strategy s,
                                   const Jobs& jobs, const Assignment& a, bool payload = true);

/// make_jobs + assign_senders + emit_plan.
[[nodiscard]] plan::Plan build_plan(const topology::Topology& t, const ReshardProblem& p,
                                    const std::vector<UnitTask>& tasks, Strategy s, Balance b);

}  // namespace meshsim::reshard

namespace meshsim::reshard {

/// `auto`: our planner beyond the paper. Every strategy (but signal) with
/// every balancing mode (search included) is simulated and the fastest kept; then a local
/// search scored by the simulator moves single jobs to other candidate
/// senders and swaps adjacent jobs, keeping strict improvements, until a
/// pass finds none or `max_evaluations` simulations are spent. Never slower
/// than the best mode it started from. Candidates are scored as plans
/// without payloads; only the winner is emitted with its payload.
struct AutoPlan {
  Strategy strategy = Strategy::broadcast;
  Balance start = Balance::none;  // the mode the search started from
  plan::Plan plan;
  Time makespan;
  int evaluations = 0;
  int improvements = 0;
};

[[nodiscard]] AutoPlan plan_auto(const topology::Topology& t, const ReshardProblem& p,
                                 const std::vector<UnitTask>& tasks, int max_evaluations = 150);

}  // namespace meshsim::reshard
