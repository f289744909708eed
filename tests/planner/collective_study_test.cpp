#include "planner/collective_study.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::planner;

TEST_CASE("every row of the bundled nccl-tests study stays within its stated tolerance",
          "[collective-study]") {
  // configs/studies/nccl-tests.json: published nccl-tests figures (busbw or
  // time), each with its source and tolerance; the prediction must stay in it.
  const CollectiveStudy s = load_collective_study(MESHSIM_SOURCE_DIR "/configs/studies/nccl-tests.json");
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
    (void)load_collective_study(file);
    FAIL("the study loaded");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("rows[1].published: give exactly one of busbw_GBps and time_us"));
  }
}
