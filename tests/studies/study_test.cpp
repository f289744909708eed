#include "studies/study.h"

#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "studies/reshard_study.h"

using namespace meshsim;
using namespace meshsim::studies;

TEST_CASE("one writer gives results.csv and the rows of results.json from one shape", "[study]") {
  // Columns: a quoted name; a time at 9 significant digits; a ratio in the
  // CSV alone; a list in the JSON alone; an optional number in both. The
  // second row has no optional number: an empty CSV cell, no JSON key.
  Results r({{"name", CsvFormat::quoted},
             {"time_s", CsvFormat::general9},
             {"ratio", CsvFormat::fixed4, false},
             {"band", CsvFormat::none},
             {"steps"},
             {"gain", CsvFormat::general6}});
  r.add({std::string("a \"b\""), 1.0 / 3, 2.0, Json{0.1, 0.2}, std::int64_t{3}, 0.25});
  r.add({std::string("c"), 2.0, 0.5, Json{0.3, 0.4}, std::int64_t{4}, Cell()});
  CHECK(r.csv() ==
        "name,time_s,ratio,steps,gain\n"
        "\"a \"\"b\"\"\",0.333333333,2.0000,3,0.25\n"
        "\"c\",2,0.5000,4,\n");
  const Json j = r.json();
  REQUIRE(j.size() == 2);
  CHECK(j[0].dump() ==
        R"({"name":"a \"b\"","time_s":0.3333333333333333,"band":[0.1,0.2],"steps":3,"gain":0.25})");
  CHECK(j[1].dump() == R"({"name":"c","time_s":2.0,"band":[0.3,0.4],"steps":4})");
  CHECK_THROWS_AS(r.add({std::string("short")}), InternalError);
}

TEST_CASE("the registry names each format once and finds a file's kind by it", "[study]") {
  std::set<std::string_view> formats;
  for (const Kind& k : kinds()) CHECK(formats.insert(k.format).second);
  // Every bundled study file has a kind `meshsim study` runs, but the search
  // spaces, which `meshsim search` runs.
  const std::string dir = MESHSIM_SOURCE_DIR "/configs/studies/";
  CHECK(read_study_file(dir + "alpa-microbench.json").kind->format == "meshsim.study/1");
  CHECK(read_study_file(dir + "alpa-e2e.json").kind->format == "meshsim.pipeline-study/1");
  CHECK(read_study_file(dir + "nccl-tests.json").kind->format == "meshsim.collective-study/1");
  CHECK(read_study_file(dir + "redistribution.json").kind->format == "meshsim.redistribution-study/1");
  CHECK(read_study_file(dir + "fidelity.json").kind->format == "meshsim.fidelity/1");
  CHECK_THROWS_WITH(read_study_file(dir + "search-gpt3-39b.json"),
                    Catch::Contains("is a search space (meshsim.search/1): run `meshsim search"));
  // A plan is no study: the message lists what `meshsim study` reads.
  CHECK_THROWS_WITH(read_study_file(MESHSIM_SOURCE_DIR "/configs/plans/two-stage-step.json"),
                    Catch::Contains("format: unsupported format \"meshsim.plan/1\" (meshsim study reads "
                                    "meshsim.study/1, meshsim.pipeline-study/1, meshsim.collective-study/1, "
                                    "meshsim.redistribution-study/1 and meshsim.fidelity/1"));
}

TEST_CASE("the resharding chart draws the figures as results.csv rounds them", "[study]") {
  // One case: send-recv under none (4.5 Gb/s) and host-size (9 Gb/s),
  // broadcast (18.0000004, which results.csv writes as 18), auto (17.9).
  // Naive send-recv is the none row; send-recv the best of both; the bound
  // is the last row's gbps x time / lower bound: 17.9 x 1 / 0.5 = 35.8.
  const auto row = [](reshard::Method m, double gbps, double time, double lb) {
    return ReshardRow{"g", "c", m, time, gbps, lb, 0, 0};
  };
  using reshard::Balance;
  using reshard::Method;
  using reshard::Strategy;
  const std::vector<ReshardRow> rows{
      row(Method{Method::Kind::strategy, Strategy::send_recv, Balance::none}, 4.5, 4.0, 0.5),
      row(Method{Method::Kind::strategy, Strategy::send_recv, Balance::host_size}, 9.0, 2.0, 0.5),
      row(Method{Method::Kind::strategy, Strategy::broadcast, Balance::none}, 18.0000004, 1.000000011, 0.5),
      row(Method{Method::Kind::automatic, Strategy::broadcast, Balance::none}, 17.9, 1.0, 0.5)};
  CHECK(reshard_chart_data(rows) ==
        "group,case,series,value\n"
        "\"g\",\"c\",\"auto\",17.9\n"
        "\"g\",\"c\",\"bound\",35.8\n"
        "\"g\",\"c\",\"broadcast\",18\n"
        "\"g\",\"c\",\"send-recv\",9\n"
        "\"g\",\"c\",\"send-recv (naive)\",4.5\n");
}
