#pragma once
// `--trace FILE` and `--trace-detail tasks|streams|hosts`: the Perfetto
// trace of a run (traces/trace_export.h), written as it is made, with a
// line on stderr while a large one is written.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plan/plan.h"
#include "plan/schedule.h"
#include "sim/executor.h"
#include "topology/topology.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

struct TraceDetailOption {
  std::string name = "tasks";
  void add_to(CLI::App& cmd);
  [[nodiscard]] traces::TraceDetail value() const;
};

/// The utilisation steps of every link a simulated run loaded (empty when
/// the run did not record link timelines).
[[nodiscard]] std::vector<traces::LinkUtilisation> link_utilisation(const sim::SimResult& r);

/// Writes the trace of `tl` to `path`; UsageError naming the path when it
/// cannot.
void write_trace(const std::string& path, traces::TraceDetail detail, const plan::Plan& plan,
                 const topology::Topology& topo, const plan::Timeline& tl,
                 const std::vector<traces::LinkUtilisation>& links = {},
                 const std::vector<traces::HostGroup>& groups = {});

/// The same for a simulated run, with its links' utilisation.
void write_trace(const std::string& path, traces::TraceDetail detail, const plan::Plan& plan,
                 const topology::Topology& topo, const sim::SimResult& r);

}  // namespace meshsim::cli
