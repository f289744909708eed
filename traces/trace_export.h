#pragma once
// Outputs people look at: a Chrome trace-event JSON that the Perfetto UI
// (ui.perfetto.dev) and chrome://tracing open, and a per-task CSV.
//
// Trace layout: one process per host (and one "network" process). How much
// goes in is the detail:
//   tasks    one thread per (device, stream); every task is a complete
//            event on each device it involves; sends draw a flow arrow
//            from sender to receiver; each directed link given in `links`
//            gets a counter track of its utilisation (rate / capacity).
//   streams  every task once, on the stream of its first device (the
//            sender, the root, the first of a group); send arrows; counters
//            for the links between hosts and the fabric only. About
//            1/devices-per-task of the slices of `tasks`.
//   hosts    no task slices: per host, counters of how many of its GPUs
//            compute and how many communicate, and its network egress
//            (Σ rate of its links into the fabric / Σ their capacity).
//            Grows with hosts × changes, not with tasks × devices.
// Timestamps are microseconds. The trace is written event by event as it
// is made (nothing but the inputs is held in memory). The same inputs give
// byte-identical files. Simulated and measured runs are drawn alike: both
// are a plan::Timeline.

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/json.h"
#include "core/units.h"
#include "plan/plan.h"
#include "plan/schedule.h"
#include "topology/topology.h"

namespace meshsim::traces {

/// One directed link's utilisation, a step function: (from this time, this fraction).
struct LinkUtilisation {
  topology::DirLinkId link = 0;
  std::vector<std::pair<Time, double>> steps;
};

enum class TraceDetail : std::uint8_t { tasks, streams, hosts };
/// CLI names: "tasks", "streams", "hosts".
inline constexpr EnumNames<TraceDetail, 3> kTraceDetailNames{
    "trace detail",
    {{{TraceDetail::tasks, "tasks"}, {TraceDetail::streams, "streams"}, {TraceDetail::hosts, "hosts"}}}};

/// Hosts that belong together (the jobs of a workload): their processes
/// are named "NAME: host" and sorted together, in the groups' order.
struct HostGroup {
  std::string name;
  std::vector<int> hosts;  // topology host indices
};

/// Writes the trace to `out` as it goes; returns the number of events.
std::size_t write_chrome_trace(std::ostream& out, const plan::Plan& plan, const topology::Topology& topo,
                               const plan::Timeline& tl, const std::vector<LinkUtilisation>& links = {},
                               TraceDetail detail = TraceDetail::tasks,
                               const std::vector<HostGroup>& groups = {});

/// The same trace as one JSON document (for tests and small traces).
[[nodiscard]] Json chrome_trace(const plan::Plan& plan, const topology::Topology& topo,
                                const plan::Timeline& tl, const std::vector<LinkUtilisation>& links = {},
                                TraceDetail detail = TraceDetail::tasks);

/// id,kind,devices,stream,start_us,end_us,duration_us,bytes,critical: one
/// row per task, written as it is made.
void write_task_csv(std::ostream& out, const plan::Plan& plan, const plan::Timeline& tl);
/// The same table as one string (for tests and small plans).
[[nodiscard]] std::string task_csv(const plan::Plan& plan, const plan::Timeline& tl);

/// "h0/nic0->leaf0": a directed link for humans.
[[nodiscard]] std::string link_name(const topology::Topology& topo, topology::DirLinkId l);

}  // namespace meshsim::traces
