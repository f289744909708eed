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
//   allgather   per unit task and destination host with r receivers: the
//               slice split in r parts along its first dimension that divides,
//               part k sent to receiver k, then an all-gather of the slice over
//               the r receivers (Alpa's send/recv + local all-gather); a group
//               whose slice does not divide gets plain sends
//   broadcast   one pipelined broadcast per unit task, the chain visiting
//               receivers host by host, so the slice enters each host once
//   signal      the broadcast plan moving 1 byte per task: the
//               "communication is free" bound (no payload)
// A plan is made of jobs: send-recv has one per (unit task, receiver),
// broadcast and signal one per unit task, allgather one per (unit task,
// destination host). Each job gets one sender; balancing chooses them:
//   none        the first candidate, jobs in order
//   device      the candidate that has sent the fewest bytes so far
//   host-size   the candidate whose host has sent the fewest bytes so far
//               (ties: fewest bytes on the device)
//   host-order  senders and order: rounds of jobs that use disjoint hosts
//               (a job occupies its sender's and its receivers' hosts),
//               each round the best of 100 seeded random packings (most
//               jobs, then the most even bytes); a job waits for the
//               previous job on any of its hosts
//   search      depth-first branch-and-bound over (next job, sender) under
//               that host-occupancy model (a job lasts bytes / its routes'
//               bottleneck + latency), bounded by each host's busy time plus
//               the cheapest durations of the jobs that must use it; starts
//               from host-order and stops after 100,000 search nodes (a
//               node budget, not a clock, keeps plans deterministic)
// A candidate on a receiver's own host is always preferred.
//
// Lower bound: max over hosts of the bytes that must enter (leave) the host
// over the network divided by the host's NIC capacity into (out of) the
// fabric, plus the smallest inter-host route latency.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"
#include "plan/plan.h"
#include "planner/sharding.h"
#include "topology/mesh.h"
#include "topology/topology.h"

namespace meshsim::planner {

enum class Strategy { send_recv, allgather, broadcast, signal };
enum class Balance { none, device, host_size, host_order, search };

inline constexpr EnumNames<Strategy, 4> kStrategyNames{"strategy",
                                                       {{{Strategy::send_recv, "send-recv"},
                                                         {Strategy::allgather, "allgather"},
                                                         {Strategy::broadcast, "broadcast"},
                                                         {Strategy::signal, "signal"}}}};
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
  std::vector<topology::NodeId> receivers;
};

/// UsageError for overlapping meshes or uneven splits.
[[nodiscard]] std::vector<UnitTask> unit_tasks(const ReshardProblem& p);

struct LowerBound {
  Time time;                  // zero when nothing must cross the network
  Bytes max_host_bytes;       // the bytes of the bounding host
  std::string bounding_host;  // and its name, with "in" or "out"
};

[[nodiscard]] LowerBound lower_bound(const topology::Topology& t, const ReshardProblem& p,
                                     const std::vector<UnitTask>& tasks);

struct Job {
  std::size_t task = 0;                     // index into the unit tasks
  std::vector<topology::NodeId> receivers;  // those this job serves
};

struct Assignment {
  std::vector<std::size_t> order;        // job indices, in plan order
  std::vector<topology::NodeId> sender;  // per job (indexed by job, not by order)
  bool host_rounds = false;              // jobs wait for the previous job on their hosts
};

[[nodiscard]] std::vector<Job> make_jobs(const topology::Topology& t, Strategy s,
                                         const std::vector<UnitTask>& tasks);
[[nodiscard]] Assignment assign_senders(const topology::Topology& t, const std::vector<UnitTask>& tasks,
                                        const std::vector<Job>& jobs, Balance b, std::uint64_t seed = 1);
/// The plan of an assignment. Without `payload` it has tasks only (no
/// tensor, buffers or regions): what the simulator needs to score it.
[[nodiscard]] plan::Plan emit_plan(const topology::Topology& t, const ReshardProblem& p,
                                   const std::vector<UnitTask>& tasks, Strategy s,
                                   const std::vector<Job>& jobs, const Assignment& a, bool payload = true);

/// make_jobs + assign_senders + emit_plan.
[[nodiscard]] plan::Plan build_plan(const topology::Topology& t, const ReshardProblem& p,
                                    const std::vector<UnitTask>& tasks, Strategy s, Balance b);

}  // namespace meshsim::planner

namespace meshsim::planner {

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

}  // namespace meshsim::planner
