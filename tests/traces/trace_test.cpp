#include <algorithm>

#include <catch2/catch.hpp>

#include "plan/plan_json.h"
#include "sim/executor.h"
#include "topology/topology_json.h"
#include "traces/trace_export.h"

using namespace meshsim;

namespace {
plan::Plan example() {
  return plan::load_plan_file(std::string(MESHSIM_SOURCE_DIR) + "/configs/plans/two-stage-step.json");
}
topology::Topology cluster() {
  return topology::load_topology_file(std::string(MESHSIM_SOURCE_DIR) +
                                      "/configs/topologies/p3.8xlarge-x5.json");
}
}  // namespace

TEST_CASE("the same plan twice gives byte-identical trace files", "[traces]") {
  const auto t = cluster();
  const auto p = example();
  sim::SimOptions o;
  o.record_link_timeline = true;
  const std::string a = traces::chrome_trace(p, t, sim::simulate(p, t, o)).dump();
  const std::string b = traces::chrome_trace(p, t, sim::simulate(p, t, o)).dump();
  CHECK(a == b);
  CHECK(traces::task_csv(p, sim::simulate(p, t)) == traces::task_csv(p, sim::simulate(p, t)));
}

TEST_CASE("the trace has a process per host, task slices, a send arrow and link counters", "[traces]") {
  const auto t = cluster();
  const auto p = example();
  sim::SimOptions o;
  o.record_link_timeline = true;
  const sim::SimResult r = sim::simulate(p, t, o);
  const Json j = traces::chrome_trace(p, t, r);
  int processes = 0, slices = 0, arrows = 0, counters = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") ++processes;
    if (ph == "X") ++slices;
    if (ph == "s" || ph == "f") ++arrows;
    if (ph == "C") {
      ++counters;
      CHECK(e["args"]["utilisation"].get<double>() >= 0.0);
      CHECK(e["args"]["utilisation"].get<double>() <= 1.0 + 1e-9);
    }
  }
  // network + 5 hosts; slices: 1 + 2 + 4 + 1 + 4 device-slices; one send: two arrow ends.
  CHECK(processes == 6);
  CHECK(slices == 12);
  CHECK(arrows == 2);
  CHECK(counters > 0);
  // The CSV has a header and one row per task; the critical tasks are flagged.
  const std::string csv = traces::task_csv(p, r);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 6);
  CHECK(csv.find("act.send,send,h0/gpu0 h1/gpu0,0,") != std::string::npos);
}
