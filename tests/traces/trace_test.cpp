#include <algorithm>
#include <map>

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

namespace {
// h0's link into the fabric (its NIC to the switch).
topology::DirLinkId egress_of_h0(const topology::Topology& t) {
  for (topology::DirLinkId d = 0; d < 2 * t.link_count(); ++d)
    if (t.link(topology::Topology::link_of(d)).kind == topology::LinkKind::network &&
        t.node(t.from(d)).host == 0 && t.node(t.to(d)).host != 0)
      return d;
  FAIL("h0 has no link into the fabric");
  return 0;
}
}  // namespace

TEST_CASE("streams detail: each task once, on its first device, and only links between hosts", "[traces]") {
  // Five tasks, five slices (the send on h0/gpu0, the broadcast on its
  // root, the all-reduce on h0/gpu0). Two counter steps on h0's fabric link
  // stay; an NVLink-class link inside h0 (link 0's forward direction) is
  // left out. The send's arrow is kept.
  const auto t = cluster();
  const auto p = example();
  const topology::DirLinkId out = egress_of_h0(t);
  REQUIRE(t.link(0).kind != topology::LinkKind::network);
  const std::vector<traces::LinkUtilisation> links{{out, {{Time::us(10), 0.5}, {Time::us(30), 0.0}}},
                                                   {0, {{Time::us(10), 1.0}}}};
  const Json j = traces::chrome_trace(p, t, run_of(p), links, traces::TraceDetail::streams);
  int slices = 0, arrows = 0, counters = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    slices += ph == "X";
    arrows += ph == "s" || ph == "f";
    if (ph == "C") {
      ++counters;
      CHECK(e["name"] == "link " + traces::link_name(t, out));
    }
  }
  CHECK(slices == 5);
  CHECK(arrows == 2);
  CHECK(counters == 2);
}

TEST_CASE("hosts detail: per host, GPUs computing and communicating, and network egress", "[traces]") {
  // From the hand-made run: h0 computes on one GPU over [0, 10]; it
  // communicates on gpu0 (send, [10, 30]) and four GPUs (all-reduce,
  // [10, 50]): 5 from 10 us, 4 from 30, 0 from 50. h1 communicates on gpu0
  // (send) then on its four GPUs (broadcast, [30, 60]): 1, 4, 0; it
  // computes on gpu3 over [60, 70]. h0's only link into the fabric runs at
  // 50 % over [10, 30]: network out 0.5 then 0. No task slices.
  const auto t = cluster();
  const auto p = example();
  const std::vector<traces::LinkUtilisation> links{
      {egress_of_h0(t), {{Time::us(10), 0.5}, {Time::us(30), 0.0}}}};
  const Json j = traces::chrome_trace(p, t, run_of(p), links, traces::TraceDetail::hosts);
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  int slices = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") ++slices;
    if (e["ph"] != "C") continue;
    const double v =
        e["args"].contains("gpus") ? e["args"]["gpus"].get<double>() : e["args"]["utilisation"].get<double>();
    series[e["name"]].emplace_back(e["ts"].get<double>(), v);
  }
  using Steps = std::vector<std::pair<double, double>>;
  const std::string h0 = t.hosts()[0].name;
  const std::string h1 = t.hosts()[1].name;
  CHECK(slices == 0);
  CHECK(series[h0 + " GPUs computing"] == Steps{{0, 1}, {10, 0}});
  CHECK(series[h0 + " GPUs communicating"] == Steps{{10, 5}, {30, 4}, {50, 0}});
  CHECK(series[h1 + " GPUs computing"] == Steps{{60, 1}, {70, 0}});
  CHECK(series[h1 + " GPUs communicating"] == Steps{{10, 1}, {30, 4}, {60, 0}});
  CHECK(series[h0 + " network out"] == Steps{{10, 0.5}, {30, 0}});
  CHECK(series.count(t.hosts()[2].name + " GPUs computing") == 0);
}
