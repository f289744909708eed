#pragma once
// Outputs people look at: a Chrome trace-event JSON that the Perfetto UI
// (ui.perfetto.dev) and chrome://tracing open, and a per-task CSV.
//
// Trace layout: one process per host (and one "network" process), one
// thread per (device, stream); every task is a complete event on each
// device it involves; sends draw a flow arrow from sender to receiver; each
// directed link that carried bytes gets a counter track of its utilisation
// (rate / capacity) when the run recorded link timelines. Timestamps are
// microseconds. The same plan and topology give byte-identical files.

#include <string>

#include "core/json.h"
#include "plan/plan.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::traces {

[[nodiscard]] Json chrome_trace(const plan::Plan& plan, const topology::Topology& topo,
                                const sim::SimResult& r);

/// id,kind,devices,stream,start_us,end_us,duration_us,bytes,critical
[[nodiscard]] std::string task_csv(const plan::Plan& plan, const sim::SimResult& r);

/// "h0/nic0->leaf0": a directed link for humans.
[[nodiscard]] std::string link_name(const topology::Topology& topo, topology::DirLinkId l);

}  // namespace meshsim::traces
