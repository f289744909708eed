#pragma once
// Simulated execution of a Plan on a topology.
//
// A task starts when all its dependencies have finished and it is at the
// head of every (device, stream) queue it belongs to (plan order), and
// holds those streams until it ends. Costs:
//   compute     explicit duration, or the device's roofline (compute_model.h)
//   send        one flow along the route src → dst
//   broadcast   a chain root → receivers[0] → ... in the order given,
//               pipelined in chunks: a hop sends chunk j once it holds it and
//               has finished sending chunk j−1; a chunk reaches the next
//               device one hop latency after its last byte. Uniform chain of
//               h hops, bandwidth B, S a multiple of the chunk c:
//                 S/B + (h−1)·c/B + h·latency
//   collective  the flows of its algorithm (sim/collective_flows.h), all
//               started together after the collective's latency; algorithm,
//               protocol and channels as the task forces them, the rest as
//               the collective table selects (recorded in
//               SimResult::collectives). The group is put in ring order
//               (ring_order.h) unless the task keeps its listed order.
// Tasks start in the plan's schedule (plan/schedule.h): once every
// predecessor (dependency or stream predecessor) has ended. The makespan and
// critical path are the timeline's (plan::make_timeline).

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"
#include "plan/plan.h"
#include "plan/schedule.h"
#include "sim/collective_flows.h"
#include "sim/compute_model.h"
#include "sim/flow_network.h"
#include "topology/topology.h"

namespace meshsim::sim {

struct LinkLoad {
  topology::DirLinkId link = 0;
  double bytes = 0;
  double utilisation = 0;  // bytes / (capacity × makespan)
};

/// What runs over one topology can share: the shape of each distinct
/// collective (its ring order, algorithm and flows) and the path of each
/// distinct send and fluid broadcast, worked out by the first run that
/// needs it. A caller that simulates plan after plan over the same
/// topology object (a strategy search, one per thread) keeps one and
/// passes it in SimOptions::cache; a run without one keeps its own. The
/// topology is told apart by its address: it must stay alive and unchanged
/// while a cache filled over it is in use. The cache is emptied before a
/// run whose topology, routing or shared link differs from those it was
/// filled under, once it holds kMaxShapes shapes (so a
/// long search's memory stays bounded), and after a run that kept a
/// direct collective's shape (each run counts those flows against the
/// memory limit as its own). Not for two runs at once.
class RunCache {
 public:
  static constexpr std::size_t kMaxShapes = 4096;
  struct Maps;  // executor.cpp's
  RunCache();
  ~RunCache();
  RunCache(const RunCache&) = delete;
  RunCache& operator=(const RunCache&) = delete;
  [[nodiscard]] Maps& maps() { return *maps_; }
  /// The distinct collectives whose shapes it holds.
  [[nodiscard]] std::size_t shapes() const;

 private:
  std::unique_ptr<Maps> maps_;
};

struct SimOptions {
  bool record_link_timeline = false;  // per-link rate changes, for traces
  /// Compute models that replace the built-in one of the same name
  /// (calibration.h makes them from measurements).
  std::vector<DeviceModel> device_models;
  /// A directed link that every flow crosses in addition to its route: a
  /// resource all transfers share, such as the memory of the one GPU that
  /// holds every virtual device (topology/virtual_gpu.h).
  std::optional<topology::DirLinkId> shared_link;
  /// Broadcasts as one fluid flow instead of chunk by chunk: the flow
  /// crosses every hop's links at once (a pipelined chain moves at its
  /// slowest hop's rate) after a start-up of Σ hop latencies + Σ over hops
  /// after the first of min(chunk, S) / the hop's route bottleneck. On a
  /// uniform chain this is the chunked model's S/B + (h−1)·c/B + h·latency
  /// exactly; on others it ignores how unequal hops buffer chunks. One flow
  /// instead of chunks × hops: what makes pipelines with thousands of
  /// large broadcasts cheap to simulate.
  bool fluid_broadcast = false;
  /// Overrides the topology's routing policy (topology.h, router.h).
  std::optional<topology::RoutingPolicy> routing;
  /// Checks after every rate computation that the rates are max-min fair
  /// (FlowNetwork::check_rates): a debugging aid.
  bool check_rates = false;
  /// Replays a run's repeated stretches (a pipeline's steady state) instead
  /// of simulating each again, with the same task times to the picosecond
  /// (sim/period_skip.h). Off with adaptive routing, link timelines and
  /// check_rates, which need every instant simulated.
  bool skip_periods = true;
  /// Shapes and paths shared with other runs (not owned; see RunCache);
  /// none: the run works out its own.
  RunCache* cache = nullptr;
};

struct SimResult {
  Time makespan;
  std::vector<plan::TaskSpan> tasks;                  // indexed like Plan::tasks
  std::vector<topology::NodeId> task_device;          // first device of each task
  std::vector<double> link_bytes;                     // per directed link
  std::vector<double> link_capacity;                  // per directed link, bytes/s
  std::vector<Time> compute_busy;                     // per node (GPUs only non-zero)
  std::vector<Time> comm_busy;                        // per node: time in send/broadcast/collective tasks
  std::vector<std::size_t> critical_path;             // task indices, first to last
  std::vector<CollectiveChoice> collectives;          // per task: what a collective ran
  std::vector<std::vector<RatePoint>> link_timeline;  // per directed link, if recorded
  std::uint64_t events = 0;
  std::uint64_t replayed_tasks = 0;  // tasks whose times were replayed from an earlier period

  /// The task spans, makespan and critical path (copied).
  [[nodiscard]] plan::Timeline timeline() const;

  /// The `k` directed links with the highest utilisation (bytes over
  /// capacity × makespan: the links that bound the run), ties by bytes and
  /// then by id.
  [[nodiscard]] std::vector<LinkLoad> bottlenecks(std::size_t k) const;
};

/// Runs `plan` on `topo`. ConfigError (file = plan.name) for devices the
/// topology lacks or a cycle through deps and stream order; UsageError for
/// a compute task on a GPU model without a device model.
[[nodiscard]] SimResult simulate(const plan::Plan& plan, const topology::Topology& topo,
                                 const SimOptions& opts = {});
/// The same, with the plan's schedule already made (a loaded plan's).
[[nodiscard]] SimResult simulate(const plan::Plan& plan, const plan::Schedule& schedule,
                                 const topology::Topology& topo, const SimOptions& opts = {});

/// The time a compute task of a plan takes under the roofline of its GPU
/// in `topo` (the simulator's model, with `opts.device_models`): what the
/// runtime's backends stand in with when they do not run the compute. Zero
/// for a device `topo` lacks or a GPU without a model. Keeps a reference to
/// `topo`.
[[nodiscard]] std::function<Time(const plan::Plan&, const plan::Task&)> roofline_stand_in(
    const topology::Topology& topo, const SimOptions& opts);

}  // namespace meshsim::sim
