#pragma once
// A collective's traffic on a topology: the flows each algorithm of the
// collective table (plan/collective.h) puts on the links, its latency term,
// and NCCL-style selection of algorithm, protocol and channels.
//
// Every flow of a collective starts together after the collective's latency
// (plan/collective.h: base + Σ step latencies). The flows of one channel
// (of the whole collective for nvls) advance in lockstep, as one weighted
// flow that shares the links with other traffic under max-min fairness, so
// alone the collective takes
//   latency + the time its busiest links need for their wire bytes.
// direct's transfers are independent point-to-point flows.
// Flows, for a group of n GPUs on N hosts (g per host), data S, wire factor w,
// C channels (channel c of a host uses its c-th NIC; "rail GPU" = the
// group's GPU beside that NIC, which starts the host's run):
//   ring       per channel, each host's GPUs in NVLink order starting at its
//              rail GPU; each edge carries w·S·steps/(n·C); an edge between
//              hosts runs from the run's last GPU over NVLink to the rail GPU
//              (PXN) and from there through NIC c to the next host's rail GPU.
//   tree       per channel and each of the two trees: each tree edge between
//              rail GPUs carries w·S/(2C) up and down; each host's chain
//              (its run, rail GPU at the top) carries w·S/C up and down.
//              A channel moves at most plan::tree_channel_limit() of data
//              per second (NCCL's per-channel tree limit).
//   nvls       per GPU, up to its NVSwitch(es) and back down:
//              all_reduce w·S·(n+1)/n each way; reduce_scatter w·S up and
//              w·S/n down; all_gather w·S/n up and w·S down.
//   nvls_tree  nvls inside each host (S·(g+1)/g each way per GPU) and, for
//              each local index k, the two trees between the hosts' GPU k
//              carrying w·S/(2g) each way on every edge.
//   direct     a flow per ordered pair: S/n (all_reduce: 2S/n).
//   collnet_direct  per channel and host: S/C from every other GPU to the
//              head and back over NVLink; the head's S/C up the switches'
//              tree and back (sharp tree: every directed link of the union
//              of the heads' routes to the root switch carries w·S/C once).
//   collnet_chain  per channel: the host's chain carries w·S/C each way on
//              every edge; the head's S/C through the sharp tree.
//   nvls (across hosts)  nvls inside each host; for each local index k,
//              a sharp tree over the hosts' GPU k carrying w·S/g.
// Selection (as NCCL's tuner): each algorithm the group supports and each
// protocol is predicted as latency + max over directed links of
// (wire bytes / capacity), without simulating; the smallest wins (ties to
// the earlier in table order).

#include <optional>
#include <vector>

#include "core/units.h"
#include "plan/collective.h"
#include "sim/router.h"
#include "topology/topology.h"

namespace meshsim::sim {

/// The facts of a group that decide which algorithms apply.
struct GroupShape {
  std::int64_t ranks = 0;
  std::int64_t hosts = 0;
  std::int64_t max_per_host = 0;  // most group GPUs on one host
  int nics = 0;                   // fewest distinct NICs the group uses on any host
  bool nvls = false;              // every host's group GPUs share an NVLS-capable NVSwitch
  bool sharp = false;             // across hosts, on a fabric that reduces (reducing_fabric)
};
/// Whether collectives may reduce in `t`'s switches: `t.sharp` is on and
/// every network switch is of a model that runs SHARP.
[[nodiscard]] bool reducing_fabric(const topology::Topology& t);
[[nodiscard]] GroupShape group_shape(const topology::Topology& t, const std::vector<topology::NodeId>& group);

/// A request with nothing forced: choose everything.
struct CollectiveRequest {
  plan::CollectiveOp op = plan::CollectiveOp::all_reduce;
  std::optional<plan::Algorithm> algorithm;
  std::optional<plan::Protocol> protocol;
  int channels = 0;  // 0: as NCCL, one per NIC across hosts, else 1
};

/// What the simulator holds per flow of a direct collective (one flow per
/// ordered pair of GPUs), its path and lockstep share included: measured at
/// 1.48 KB (peak memory of `meshsim collective alltoall` on 128 DGX-H100,
/// 1,047,552 flows: 1.55 GB), rounded up.
inline constexpr double kBytesPerDirectFlow = 1700;

struct CollectiveChoice {
  plan::Algorithm algorithm = plan::Algorithm::ring;
  plan::Protocol protocol = plan::Protocol::simple;
  int channels = 1;
  Time predicted;  // the selector's estimate (latency + busiest link)
};

struct CollectiveFlow {
  topology::NodeId src = 0;
  topology::NodeId dst = 0;
  std::vector<topology::DirLinkId> path;
  Bytes bytes;
  int pipeline = 0;  // flows of one pipeline advance in lockstep
};

/// The flows of one pipeline as one weighted flow (flow_network.h): each
/// link weighs the pipeline's bytes on it over `size`, the largest member's
/// bytes. A ring channel's edges (or a tree channel's) move chunk by chunk
/// through bounded buffers, so no edge runs ahead of the slowest one.
struct LockstepFlow {
  std::vector<topology::DirLinkId> path;
  std::vector<double> weights;
  Bytes size;
  std::vector<std::size_t> members;  // indices into CollectiveTraffic::flows
  std::optional<Bandwidth> cap;      // CollectiveTraffic::pipeline_limit
};

struct CollectiveTraffic {
  std::vector<CollectiveFlow> flows;
  Time latency;
  Bandwidth pipeline_limit;  // each pipeline's most data per second; zero: none
};

/// Why `a` cannot run `op` on this group, or empty when it can.
[[nodiscard]] std::string unsupported_reason(plan::Algorithm a, plan::CollectiveOp op, const GroupShape& s);

/// The traffic of `op` on `group` (already in ring order: host runs in
/// NVLink order, see ring_order.h) for data `size`. Paths come from `router`.
[[nodiscard]] CollectiveTraffic collective_traffic(const topology::Topology& t,
                                                   const std::vector<topology::NodeId>& group,
                                                   plan::CollectiveOp op, Bytes size,
                                                   const CollectiveChoice& choice, Router& router);

/// The traffic's pipelines as weighted flows, in pipeline order.
[[nodiscard]] std::vector<LockstepFlow> lockstep_flows(const CollectiveTraffic& traffic);

/// The selector's estimate: latency + the larger of (max over directed
/// links of the bytes the traffic puts on it / its capacity) and (a
/// pipeline's data / its limit).
[[nodiscard]] Time predict(const topology::Topology& t, const CollectiveTraffic& traffic);

/// Fills what `req` leaves open by predicted time; UsageError when a forced
/// algorithm cannot run this op on this group.
[[nodiscard]] CollectiveChoice choose_collective(const topology::Topology& t,
                                                 const std::vector<topology::NodeId>& group, Bytes size,
                                                 const CollectiveRequest& req);

/// NCCL's default channel count for the group: one per NIC when it spans
/// hosts (the fewest any host has), otherwise 1.
[[nodiscard]] int default_channels(const GroupShape& s);

}  // namespace meshsim::sim
