#include "studies/workload.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "tests/topology/test_util.h"

using namespace meshsim;
using namespace meshsim::studies;
using Catch::Matchers::Contains;

namespace {

// The 4-host two-leaf 2:1 tree (tests/topology/test_util.h), adaptive
// routing: flows spread over the uplinks evenly.
topology::Topology small_tree() {
  return topology::test::two_leaf_tree(topology::RoutingPolicy::adaptive);
}

Workload two_allreduces(const char* a_hosts, const char* b_hosts) {
  const std::string text = fmt::format(R"({{"format": "meshsim.workload/1", "name": "w", "topology": "x",
    "jobs": [{{"name": "a", "kind": "collective", "hosts": 2, "placement": "{}", "op": "allreduce", "size": "4GiB",
               "algorithm": "ring"}},
             {{"name": "b", "kind": "collective", "hosts": 2, "placement": "{}", "op": "allreduce", "size": "4GiB",
               "algorithm": "ring"}}]}})",
                                       a_hosts, b_hosts);
  return load_workload(JsonCursor(parse_json_text(text, "w.json"), "w.json"));
}

model::Model no_model(const std::string&) {
  throw UsageError("no models here");
}

}  // namespace

TEST_CASE("two jobs share a leaf's uplinks only when they both cross it: by hand on 4 hosts", "[workload]") {
  topology::Topology t = small_tree();
  // Each job's ring all-reduce over its 2 hosts (16 GPUs) runs 8 channels,
  // one per NIC; each ring edge between the hosts carries 4 GiB x 2 x 15/16
  // / 8 = 1,006,632,960 bytes. Job a on hosts 0 and 2 and job b on 1 and 3
  // both cross between the leaves: alone a job's 8 flows each way take the
  // 8 uplinks at a NIC rate (50 GB/s x 0.94 = 47 GB/s): 21.4 ms; together
  // 16 flows share them, 23.5 GB/s each: 42.8 ms. Slowdown just under 2
  // (the fixed latency is paid once either way).
  const WorkloadRun crossing = run_workload(two_allreduces("hosts=0,2", "hosts=1,3"), t, no_model);
  REQUIRE(crossing.jobs.size() == 2);
  CHECK(crossing.jobs[0].hosts == std::vector<int>{0, 2});
  CHECK(crossing.jobs[1].hosts == std::vector<int>{1, 3});
  CHECK(crossing.jobs[0].alone == crossing.jobs[1].alone);
  CHECK(crossing.jobs[0].alone.seconds() == Approx(1006632960 / 47e9).epsilon(0.03));
  CHECK(crossing.jobs[0].together.seconds() == Approx(1006632960 / 23.5e9).epsilon(0.01));
  for (const JobOutcome& j : crossing.jobs) {
    CHECK(j.slowdown() > 1.95);
    CHECK(j.slowdown() <= 2.0);
  }
  // Each job under its own leaf (a on 0-1, b on 2-3): nothing shared, no slowdown.
  const WorkloadRun apart = run_workload(two_allreduces("contiguous", "contiguous"), t, no_model);
  CHECK(apart.jobs[0].hosts == std::vector<int>{0, 1});
  CHECK(apart.jobs[1].hosts == std::vector<int>{2, 3});
  for (const JobOutcome& j : apart.jobs) CHECK(j.slowdown() == Approx(1.0));
  // The whole plan: both jobs' tasks, named after their job.
  CHECK(crossing.plan.tasks.size() == 2);
  CHECK(crossing.plan.tasks[1].id == "b/collective");
}

TEST_CASE("repeats run back to back, a start delays, background traffic runs at its rate", "[workload]") {
  topology::Topology t = small_tree();
  const std::string text = R"({"format": "meshsim.workload/1", "name": "w", "topology": "x",
    "jobs": [{"name": "a", "kind": "collective", "hosts": 2, "op": "allreduce", "size": "1GiB", "repeat": 3,
              "start": "5ms"},
             {"name": "ckpt", "kind": "traffic", "hosts": 2, "pattern": "incast", "size": "100MiB",
              "period": "10ms", "repeat": 4}]})";
  const Workload w = load_workload(JsonCursor(parse_json_text(text, "w.json"), "w.json"));
  const WorkloadRun r = run_workload(w, t, no_model);
  const Workload one_repeat = load_workload(JsonCursor(parse_json_text(R"({"format": "meshsim.workload/1",
    "name": "w", "topology": "x", "jobs": [{"name": "a", "kind": "collective", "hosts": 2, "op": "allreduce",
    "size": "1GiB"}]})",
                                                                       "w.json"),
                                                       "w.json"));
  const Time once = run_workload(one_repeat, t, no_model).jobs[0].alone;
  CHECK(r.jobs[0].alone.seconds() == Approx(3 * once.seconds()).epsilon(1e-6));
  CHECK(r.jobs[0].start == Time::ms(5));
  // The checkpoint: host 3 sends 100 MiB to host 2 (its first) each 10 ms
  // period, well within it (100 MiB at 47 GB/s is 2.2 ms): 4 periods, the
  // last one's send ends 2.2 ms into it, 32.2 ms after the start. It stays
  // under the leaf: the all-reduce job is not slowed.
  CHECK(r.jobs[1].alone.seconds() == Approx(0.030 + 104857600.0 / 47e9).epsilon(0.01));
  CHECK(r.jobs[0].slowdown() == Approx(1.0));
}

TEST_CASE("workload files are checked, and jobs that do not fit are refused", "[workload]") {
  auto load = [](const std::string& jobs) {
    return load_workload(JsonCursor(
        parse_json_text(
            R"({"format": "meshsim.workload/1", "name": "w", "topology": "x", "jobs": )" + jobs + "}",
            "w.json"),
        "w.json"));
  };
  CHECK_THROWS_WITH(load(R"([{"name": "a", "kind": "batch", "hosts": 1}])"),
                    Contains("jobs[0].kind") && Contains("unknown job kind \"batch\""));
  CHECK_THROWS_WITH(
      load(R"([{"name": "a", "kind": "collective", "hosts": 1, "op": "allreduce", "size": "1GiB",
                              "period": "1ms"}])"),
      Contains("unknown key \"period\""));
  CHECK_THROWS_WITH(load(R"([{"name": "a", "kind": "traffic", "hosts": 2, "pattern": "incast", "size": "1GiB",
                              "period": "0s"}])"),
                    Contains("jobs[0].period"));
  CHECK_THROWS_WITH(load("[]"), Contains("at least one job"));
  topology::Topology t = small_tree();
  CHECK_THROWS_WITH(run_workload(load(R"([{"name": "a", "kind": "collective", "hosts": 3, "op": "allreduce",
                                           "size": "1GiB"}, {"name": "b", "kind": "collective", "hosts": 2,
                                           "op": "allreduce", "size": "1GiB"}])"),
                                 t, no_model),
                    Contains("job \"b\" needs 2 hosts; 1 of the cluster's 4 are free"));
  CHECK_THROWS_WITH(run_workload(load(R"([{"name": "a", "kind": "collective", "hosts": 2, "op": "allreduce",
                                           "size": "1GiB"}, {"name": "b", "kind": "collective", "hosts": 1,
                                           "placement": "hosts=1", "op": "allreduce", "size": "1GiB"}])"),
                                 t, no_model),
                    Contains("job \"b\": host 1 is taken by an earlier job"));
}

TEST_CASE("a plan file's hosts become the job's", "[workload]") {
  topology::Topology t = small_tree();
  // hA/gpu0 -> hB/gpu0 on hosts 1 and 3: h1/gpu0 -> h3/gpu0, across the
  // leaves, one flow at a NIC rate (47 GB/s).
  const std::string text = fmt::format(R"({{"format": "meshsim.workload/1", "name": "w", "topology": "x",
    "jobs": [{{"name": "p", "kind": "plan", "hosts": 2, "placement": "hosts=1,3", "plan": "{}"}}]}})",
                                       MESHSIM_TEST_DATA "/workloads/cross-send.json");
  const WorkloadRun r =
      run_workload(load_workload(JsonCursor(parse_json_text(text, "w.json"), "w.json")), t, no_model);
  CHECK(r.plan.devices == std::vector<std::string>{"h1/gpu0", "h3/gpu0"});
  CHECK(r.jobs[0].alone.seconds() == Approx(1073741824 / 47e9).epsilon(0.01));
  const std::string one_host = fmt::format(R"({{"format": "meshsim.workload/1", "name": "w", "topology": "x",
    "jobs": [{{"name": "p", "kind": "plan", "hosts": 1, "plan": "{}"}}]}})",
                                           MESHSIM_TEST_DATA "/workloads/cross-send.json");
  CHECK_THROWS_WITH(
      run_workload(load_workload(JsonCursor(parse_json_text(one_host, "w.json"), "w.json")), t, no_model),
      Contains("job \"p\": its plan spans more than its 1 hosts (\"hB/gpu0\")"));
  // The topology's hosts are back in their built order after every job.
  CHECK(t.node(t.gpus().front()).name == "h0/gpu0");
}
