#include <algorithm>

#include <catch2/catch.hpp>

#include "plan/plan_json.h"
#include "plan/schedule.h"
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
// A hand-made run of two-stage-step: fwd [0, 10] us, send [10, 30], bcast
// [30, 60], stage 1 [60, 70], all-reduce [10, 50]. Critical path: fwd, send,
// bcast, stage 1.
plan::Timeline run_of(const plan::Plan& p) {
  return plan::make_timeline(plan::make_schedule(p, "p.json"), {{Time::us(0), Time::us(10)},
                                                                {Time::us(10), Time::us(30)},
                                                                {Time::us(30), Time::us(60)},
                                                                {Time::us(60), Time::us(70)},
                                                                {Time::us(10), Time::us(50)}});
}
}  // namespace

TEST_CASE("the same plan twice gives byte-identical trace files", "[traces]") {
  const auto t = cluster();
  const auto p = example();
  CHECK(traces::chrome_trace(p, t, run_of(p)).dump() == traces::chrome_trace(p, t, run_of(p)).dump());
  CHECK(traces::task_csv(p, run_of(p)) == traces::task_csv(p, run_of(p)));
}

TEST_CASE("the trace has a process per host, task slices, a send arrow and link counters", "[traces]") {
  const auto t = cluster();
  const auto p = example();
  const plan::Timeline tl = run_of(p);
  REQUIRE(tl.critical_path == std::vector<std::size_t>{0, 1, 2, 3});
  // One link busy at 50 % from 10 us and idle from 30 us.
  const std::vector<traces::LinkUtilisation> links{{3, {{Time::us(10), 0.5}, {Time::us(30), 0.0}}}};
  const Json j = traces::chrome_trace(p, t, tl, links);
  int processes = 0, slices = 0, arrows = 0, counters = 0, critical = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") ++processes;
    if (ph == "X") {
      ++slices;
      if (e["args"]["critical"].get<bool>()) ++critical;
    }
    if (ph == "s" || ph == "f") ++arrows;
    if (ph == "C") {
      ++counters;
      CHECK(e["name"] == "link " + traces::link_name(t, 3));
    }
    if (ph == "X" && e["name"] == "act.bcast") CHECK(e["dur"].get<double>() == 30.0);
  }
  // network + 5 hosts; slices: 1 + 2 + 4 + 1 + 4 device-slices, of which the
  // critical tasks fwd, send, bcast, stage 1 give 1 + 2 + 4 + 1; one send:
  // two arrow ends; two counter steps.
  CHECK(processes == 6);
  CHECK(slices == 12);
  CHECK(critical == 8);
  CHECK(arrows == 2);
  CHECK(counters == 2);
  // The CSV has a header and one row per task; the critical tasks are flagged.
  const std::string csv = traces::task_csv(p, tl);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 6);
  CHECK(csv.find("act.send,send,h0/gpu0 h1/gpu0,0,10.000000,30.000000,20.000000,134217728,1") !=
        std::string::npos);
  CHECK(csv.find("grad.allreduce,collective,") != std::string::npos);
  CHECK(csv.find(",268435456,0\n") != std::string::npos);
}
