#include "studies/collective_study.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::studies;

namespace {
CollectiveStudy load_file(const std::string& file) {
  return load_study_file(file, load_collective_study);
}
}  // namespace

TEST_CASE("every row of the bundled nccl-tests study stays within its stated tolerance",
          "[collective-study]") {
  // configs/studies/nccl-tests.json: published nccl-tests figures (busbw or
  // time), each with its source and tolerance; the prediction must stay in it.
  const CollectiveStudy s = load_file(MESHSIM_SOURCE_DIR "/configs/studies/nccl-tests.json");
  REQUIRE(s.rows.size() >= 8);
  for (const auto& row : s.rows) {
    const auto r = run_collective_row(row);
    INFO(row.name << ": predicted " << r.predicted << " (" << r.chosen << "), published " << row.published
                  << ", error " << 100 * r.error << " %, tolerance " << 100 * row.tolerance << " %");
    CHECK(r.within);
    CHECK(std::abs(r.error) <= row.tolerance);
  }
}

TEST_CASE("a collective study names the JSON path of a bad row", "[collective-study]") {
  const std::string file = MESHSIM_TEST_DATA "/bad_collective_study.json";
  try {
    (void)load_file(file);
    FAIL("the study loaded");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("rows[1].published: give exactly one of busbw_GBps and time_us"));
  }
}

TEST_CASE("a collective study's results file has one line per row, in its unit", "[collective-study]") {
  // Row "a" publishes a time (us), row "b" a bus bandwidth; the CSV carries
  // each row's op, size and figures, the JSON the same rows under the study.
  CollectiveStudy s;
  s.name = "mini";
  const auto row = [](std::string name, bool time, double published) {
    CollectiveStudyRow r;
    r.name = std::move(name);
    r.op = plan::CollectiveOp::all_gather;
    r.size = Bytes(1024);
    r.published_is_time = time;
    r.published = published;
    r.source = std::string(1, 'x');
    return r;
  };
  s.rows = {row("a", true, 20), row("b", false, 100)};
  const std::vector<CollectiveStudyResult> r{{22, 0.1, true, "ring/ll/2"},
                                             {50, -0.5, false, "tree/simple/4"}};
  const Results out = collective_results(s, r);
  CHECK(out.csv() ==
        "name,op,size_bytes,chosen,unit,predicted,published,error,tolerance,within,source\n"
        "\"a\",all_gather,1024,ring/ll/2,us,22,20,0.1000,0.1,true,\"x\"\n"
        "\"b\",all_gather,1024,tree/simple/4,GB/s busbw,50,100,-0.5000,0.1,false,\"x\"\n");
  const Json j = out.json();
  REQUIRE(j.size() == 2);
  CHECK(j[1]["unit"] == "GB/s busbw");
  CHECK(j[1]["within"] == false);
  CHECK_FALSE(j[1].contains("op"));  // results.csv's alone
}
