#pragma once
// Outputs people look at: a Chrome trace-event JSON that the Perfetto UI
// (ui.perfetto.dev) and chrome://tracing open, and a per-task CSV.
//
// Trace layout: one process per host (and one "network" process), one
// thread per (device, stream); every task is a complete event on each
// device it involves; sends draw a flow arrow from sender to receiver; each
// directed link given in `links` gets a counter track of its utilisation
// (rate / capacity: a simulated run's link timeline). Timestamps are
// microseconds. The same plan, topology and timeline give byte-identical
// files. Simulated and measured runs are drawn alike: both are a
// plan::Timeline.

#include <string>
#include <utility>
#include <vector>

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

[[nodiscard]] Json chrome_trace(const plan::Plan& plan, const topology::Topology& topo,
                                const plan::Timeline& tl, const std::vector<LinkUtilisation>& links = {});

/// id,kind,devices,stream,start_us,end_us,duration_us,bytes,critical
[[nodiscard]] std::string task_csv(const plan::Plan& plan, const plan::Timeline& tl);

/// "h0/nic0->leaf0": a directed link for humans.
[[nodiscard]] std::string link_name(const topology::Topology& topo, topology::DirLinkId l);

}  // namespace meshsim::traces
