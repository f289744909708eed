#include "planner/pipeline_study.h"

#include <map>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::planner;

TEST_CASE("alpa-e2e: broadcast + eager-1F1B closest to the signal bound, then broadcast, then send-recv",
          "[pipeline-study]") {
  // The paper's end-to-end ordering, on the cases whose stages sit on
  // different hosts (2.6B: dp 2 x tp 2 per host; the 2B U-Transformer: one
  // host per stage), so stage transfers cross the 10 Gbps network.
  PipelineStudy s = load_pipeline_study(MESHSIM_SOURCE_DIR "/configs/studies/alpa-e2e.json");
  REQUIRE(s.cases.size() == 6);
  CHECK(s.baseline == "send-recv");
  std::erase_if(s.cases, [](const PipelineStudyCase& c) {
    return c.name != "gpt-2.6b" && c.name != "u-transformer-2b";
  });
  REQUIRE(s.cases.size() == 2);
  CHECK(s.cases[0].config.microbatch_size == 4);  // batch 32 = dp 2 x 4 microbatches x 4
  const auto topo = topology::load_topology_file(s.topology);
  sim::SimOptions opts;
  opts.fluid_broadcast = true;
  const auto rows = run_pipeline_study(s, topo, opts);
  REQUIRE(rows.size() == 2 * s.methods.size());
  std::map<std::string, std::map<std::string, double>> t;
  for (const auto& r : rows) t[r.case_name][r.method] = r.iteration_s;
  for (const auto& [name, m] : t) {
    INFO(name);
    CHECK(m.at("signal (eager-1F1B)") <= m.at("broadcast + eager-1F1B"));
    CHECK(m.at("broadcast + eager-1F1B") < m.at("broadcast"));
    CHECK(m.at("broadcast") < m.at("send-recv"));
  }
  for (const auto& r : rows)
    if (r.method == "send-recv") CHECK(r.gain == 0);
}

TEST_CASE("pipeline studies report mistakes with their JSON path", "[pipeline-study]") {
  CHECK_THROWS_AS(load_pipeline_study(MESHSIM_TEST_DATA "/bad_pipeline_study.json"), ConfigError);
  try {
    (void)load_pipeline_study(MESHSIM_TEST_DATA "/bad_pipeline_study.json");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cases[0].batch") && Catch::Contains("does not split"));
  }
}
