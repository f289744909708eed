#include "studies/pipeline_study.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "topology/cluster.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::studies;

namespace {
PipelineStudy load_file(const std::string& file) {
  return load_study_file(file, load_pipeline_study);
}
}  // namespace

TEST_CASE("alpa-e2e: broadcast + eager-1F1B closest to the signal bound, then broadcast, then send-recv",
          "[pipeline-study]") {
  // The paper's end-to-end ordering, on the cases whose stages sit on
  // different hosts (2.6B: dp 2 x tp 2 per host; the 2B U-Net: one host per
  // stage), so stage transfers cross the 10 Gbps network.
  PipelineStudy s = load_file(MESHSIM_SOURCE_DIR "/configs/studies/alpa-e2e.json");
  REQUIRE(s.cases.size() == 6);
  CHECK(s.baseline == "send-recv");
  // The paper's gains are over its artifact's baseline: broadcast, communication on the compute stream.
  CHECK(s.paper_baseline == "broadcast, no overlap");
  REQUIRE(s.methods.front().name == s.paper_baseline);
  CHECK_FALSE(s.methods.front().overlap);
  CHECK(s.methods.back().overlap);
  std::erase_if(s.cases,
                [](const PipelineStudyCase& c) { return c.name != "gpt-2.6b" && c.name != "unet-2b"; });
  REQUIRE(s.cases.size() == 2);
  CHECK(s.cases[0].config.microbatch_size == 4);                    // batch 32 = dp 2 x 4 microbatches x 4
  CHECK(s.cases[1].config.microbatch_size == 64);                   // batch 2048 = 32 microbatches x 64
  CHECK(s.cases[1].config.stage_starts == std::vector<int>{0, 9});  // the artifact's split
  auto topo = topology::load_topology_file(s.topology);
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
    CHECK(m.at("broadcast") < m.at("broadcast, no overlap"));
  }
  for (const auto& r : rows)
    if (r.method == "send-recv") CHECK(r.gain == 0);
  // Placed at random, each case takes hosts of its own: on one switch every
  // host is like every other, so the times are the same, host for host.
  topo.placement = "random:3";
  const auto placed = run_pipeline_study(s, topo, opts);
  REQUIRE(placed.size() == rows.size());
  for (std::size_t k = 0; k < rows.size(); ++k) CHECK(placed[k].iteration_s == Approx(rows[k].iteration_s));
  CHECK(topo.hosts()[0].name != "h0");  // the last case ran placed
}

TEST_CASE("pipeline studies report mistakes with their JSON path", "[pipeline-study]") {
  CHECK_THROWS_AS(load_file(MESHSIM_TEST_DATA "/bad_pipeline_study.json"), ConfigError);
  try {
    (void)load_file(MESHSIM_TEST_DATA "/bad_pipeline_study.json");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cases[0].batch") && Catch::Contains("does not split"));
  }
  // dp x microbatches = 2^32 does not wrap to 0 (which divided by zero).
  try {
    (void)load_file(MESHSIM_TEST_DATA "/bad_pipeline_overflow.json");
    FAIL("accepted dp 65536 x 65536 microbatches for a batch of 64");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(),
               Catch::Contains("cases[0].batch") && Catch::Contains("dp 65536 x 65536 microbatches"));
  }
}

TEST_CASE("a pipeline study's bound is the signal method, or none", "[pipeline-study]") {
  // "best" leaves the bound out, so marking a real method as the bound
  // would report a slower method best: refused, naming the key.
  const std::string file =
      (std::filesystem::temp_directory_path() / fmt::format("meshsim-bound-study-{}.json", getpid()))
          .string();
  auto write = [&](const std::string& bound) {
    std::ofstream(file) << R"({"format": "meshsim.pipeline-study/1", "name": "b", "topology": "dgx-h100",
      "methods": [{"name": "bc", "reshard": "broadcast", "schedule": "1f1b"},
                  {"name": "sig", "reshard": "signal", "schedule": "1f1b"}],
      "baseline": "bc", "bound": ")"
                        << bound << R"(", "cases": [{"group": "g", "name": "c", "model": ")"
                        << MESHSIM_SOURCE_DIR
                        << R"(/configs/models/gpt3-1.3b.json", "dp": 1, "tp": 1, "pp": 2,
                 "microbatches": 8, "batch": 16}]})";
  };
  write("sig");
  CHECK(load_file(file).bound == "sig");
  write("bc");
  CHECK_THROWS_WITH(load_file(file),
                    Catch::Contains("bound") && Catch::Contains("\"bc\" moves data between stages"));
  std::filesystem::remove(file);
}

TEST_CASE("a pipeline study names each case and method once", "[pipeline-study]") {
  // Two rows of one name read as one in the table: refused at the repeat.
  const std::string file =
      (std::filesystem::temp_directory_path() / fmt::format("meshsim-dup-study-{}.json", getpid())).string();
  auto write = [&](const std::string& second_case, const std::string& second_method) {
    const std::string c = R"({"group": "g", "name": "NAME", "model": ")" + std::string(MESHSIM_SOURCE_DIR) +
                          R"(/configs/models/gpt3-1.3b.json", "dp": 1, "tp": 1, "pp": 2, "microbatches": 8,
                              "batch": 16})";
    auto named = [&](const std::string& n) { return std::string(c).replace(c.find("NAME"), 4, n); };
    std::ofstream(file) << R"({"format": "meshsim.pipeline-study/1", "name": "d", "topology": "dgx-h100",
      "methods": [{"name": "bc", "reshard": "broadcast"}, {"name": ")"
                        << second_method << R"(", "reshard": "signal"}],
      "baseline": "bc", "cases": [)"
                        << named("c1") << ", " << named(second_case) << "]}";
  };
  write("c2", "sig");
  CHECK(load_file(file).cases.size() == 2);
  write("c1", "sig");
  CHECK_THROWS_WITH(load_file(file),
                    Catch::Contains("cases[1].name") && Catch::Contains("\"c1\" is also cases[0]'s"));
  write("c2", "bc");
  CHECK_THROWS_WITH(load_file(file), Catch::Contains("methods[1].name"));
  std::filesystem::remove(file);
}

TEST_CASE("a pipeline study case may recompute activations", "[pipeline-study]") {
  // GPT-3 1.3B on one DGX H100, pp 2, tp 1: recomputation turns each
  // microbatch's F + 2F into F + 3F of compute and adds no communication,
  // so the iteration takes more than 1.2x and at most 4/3 of the time.
  const std::string file =
      (std::filesystem::temp_directory_path() / fmt::format("meshsim-recompute-study-{}.json", getpid()))
          .string();
  const std::string model = MESHSIM_SOURCE_DIR "/configs/models/gpt3-1.3b.json";
  auto write = [&](const std::string& methods) {
    std::ofstream(file) << R"({"format": "meshsim.pipeline-study/1", "name": "rc", "topology": "dgx-h100",
      "methods": )" << methods
                        << R"(, "baseline": "b",
      "cases": [{"group": "g", "name": "plain", "model": ")"
                        << model << R"(", "dp": 1, "tp": 1, "pp": 2,
                 "microbatches": 8, "batch": 16},
                {"group": "g", "name": "recompute", "model": ")"
                        << model << R"(", "dp": 1, "tp": 1, "pp": 2,
                 "microbatches": 8, "batch": 16, "recompute": true}]})";
  };
  write(R"([{"name": "b", "reshard": "broadcast", "schedule": "1f1b"}])");
  const PipelineStudy s = load_file(file);
  REQUIRE(s.cases.size() == 2);
  CHECK(s.bound.empty());  // no bound: every method may be the best
  CHECK_FALSE(s.cases[0].config.full_recompute());
  CHECK(s.cases[1].config.full_recompute());
  topology::ClusterSpec spec;
  spec.host_preset = "dgx-h100";
  auto topo = topology::build_cluster(spec);
  sim::SimOptions opts;
  opts.fluid_broadcast = true;
  const auto rows = run_pipeline_study(s, topo, opts);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].iteration_s > 1.2 * rows[0].iteration_s);
  CHECK(rows[1].iteration_s <= 4.0 / 3.0 * rows[0].iteration_s * (1 + 1e-9));
  CHECK(pipeline_results(s, rows).json()[1]["recompute"] == true);
  // zb-h1 cannot recompute: the case's key is named.
  write(R"([{"name": "b", "reshard": "broadcast", "schedule": "zb-h1"}])");
  try {
    (void)load_file(file);
    FAIL("a recomputing case with a zb-h1 method was accepted");
  } catch (const ConfigError& e) {
    CHECK(e.json_path() == "cases[1].recompute");
    CHECK_THAT(e.message(), Catch::Contains("zb-h1"));
  }
  std::filesystem::remove(file);
}

TEST_CASE("a pipeline study case may fix how tensor ranks split its layers", "[pipeline-study]") {
  // The 2B U-Net, tp 4 x pp 2 on two p3.8xlarge hosts: the chosen splits
  // move fewer bytes than every layer by channels, so the case with them
  // (the default, auto) runs no slower; "channels" fixes the split; an
  // unknown split is named with its JSON path.
  const std::string file =
      (std::filesystem::temp_directory_path() / fmt::format("meshsim-split-study-{}.json", getpid()))
          .string();
  auto write = [&](const std::string& split) {
    std::ofstream(file)
        << R"({"format": "meshsim.pipeline-study/1", "name": "split", "topology": "p3.8xlarge",
      "methods": [{"name": "b", "reshard": "broadcast"}], "baseline": "b",
      "cases": [{"group": "g", "name": "auto", "model": ")"
        << MESHSIM_SOURCE_DIR << R"(/configs/models/unet-2b.json", "dp": 1, "tp": 4, "pp": 2,
                 "microbatches": 4, "batch": 32, "stage_starts": [0, 9]},
                {"group": "g", "name": "fixed", "model": ")"
        << MESHSIM_SOURCE_DIR << R"(/configs/models/unet-2b.json", "dp": 1, "tp": 4, "pp": 2,
                 "microbatches": 4, "batch": 32, "stage_starts": [0, 9], "layer_split": ")"
        << split << R"("}]})";
  };
  write("channels");
  const PipelineStudy s = load_file(file);
  REQUIRE(s.cases.size() == 2);
  CHECK_FALSE(s.cases[0].config.layer_split);
  CHECK(s.cases[1].config.layer_split == model::LayerSplit::channels);
  topology::ClusterSpec spec;
  spec.host_preset = "p3.8xlarge";
  spec.hosts = 2;
  sim::SimOptions opts;
  opts.fluid_broadcast = true;
  topology::Topology cluster = topology::build_cluster(spec);
  const auto rows = run_pipeline_study(s, cluster, opts);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].iteration_s < rows[1].iteration_s);
  write("rows");
  try {
    (void)load_file(file);
    FAIL("an unknown layer split was accepted");
  } catch (const ConfigError& e) {
    CHECK(e.json_path() == "cases[1].layer_split");
  }
  std::filesystem::remove(file);
}
