#include "plan/nccl_tests.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::plan;

namespace {
const std::string kDir = MESHSIM_SOURCE_DIR "/tests/data/nccl_tests/";

std::string refusal(const std::string& text, const std::string& file = "x.txt") {
  try {
    (void)parse_nccl_tests(text, file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("nccl-tests output of an older version, named after its test", "[nccl-tests]") {
  // No "Collective test starting" line: the file's name says all_gather;
  // rank lines with the bus alone ([0x18]); an NCCL INFO line among them;
  // #wrong "N/A" where checking was off.
  const NcclTestsRun r = load_nccl_tests_file(kDir + "all_gather_perf.txt");
  CHECK(r.test == "all_gather_perf");
  CHECK(r.op == "allgather");
  REQUIRE(r.ranks.size() == 4);
  CHECK(r.ranks[3].host == "node-a");
  CHECK(r.ranks[3].device == 3);
  CHECK(r.ranks[3].gpu == "NVIDIA A100-SXM4-80GB");
  CHECK(r.hosts() == std::vector<std::string>{"node-a"});
  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[2].size == Bytes(4194304));
  CHECK(r.rows[2].count == 262144);
  CHECK(r.rows[2].redop == "none");
  CHECK(r.rows[2].time == Time::ns(47350));
  CHECK(r.rows[2].busbw_GBps == 66.44);
  CHECK(r.rows[2].time_in_place == Time::ns(46900));
}

TEST_CASE("nccl-tests output under MPI, over two hosts, in the current layout", "[nccl-tests]") {
  // Every line behind "[1,0]<stdout>:"; rank lines with domain:bus:device;
  // a time too wide for its column in exponent form.
  const NcclTestsRun r = load_nccl_tests_file(kDir + "mpi_all_reduce.txt");
  CHECK(r.test == "all_reduce_perf");
  CHECK(r.op == "allreduce");
  CHECK(r.hosts() == std::vector<std::string>{"h100-node01", "h100-node02"});
  CHECK(r.ranks[2].device == 0);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[1].time == Time::us(120));
  CHECK(r.rows[0].root == -1);
}

TEST_CASE("what meshsim writes in nccl-tests' layout reads back the same", "[nccl-tests]") {
  NcclTestsRun r = load_nccl_tests_file(kDir + "mpi_all_reduce.txt");
  const NcclTestsRun back = parse_nccl_tests(nccl_tests_text(r), "written.txt");
  CHECK(back.test == r.test);
  REQUIRE(back.ranks.size() == r.ranks.size());
  CHECK(back.ranks[3].host == "h100-node02");
  REQUIRE(back.rows.size() == 2);
  CHECK(back.rows[0].time == r.rows[0].time);  // 73.93 us, printed to 0.01 us
  CHECK(back.rows[1].size == r.rows[1].size);
}

TEST_CASE("nccl-tests output that cannot be read is refused with the file and line", "[nccl-tests]") {
  const std::string ranks = "#  Rank  0 Group  0 Pid 1 on h device  0 [0x18] GPU\n";
  const std::string row = "1048576 262144 float sum -1 73.93 14.18 26.59 0 72.83 14.40 27.00 0\n";
  CHECK(refusal("# Collective test starting: all_reduce_perf\n" + ranks + row).empty());
  CHECK_THAT(refusal(ranks + row), Catch::Contains("cannot tell which test wrote this"));
  CHECK_THAT(refusal("# Collective test starting: reduce_perf\n" + ranks + row),
             Catch::Contains("reduce_perf is not a test meshsim times"));
  CHECK_THAT(refusal("# Collective test starting: all_reduce_perf\n" + row), Catch::Contains("no \"#  Rank"));
  CHECK_THAT(refusal("# Collective test starting: all_reduce_perf\n" + ranks),
             Catch::Contains("no result rows"));
  CHECK_THAT(refusal("# Collective test starting: all_reduce_perf\n" + ranks +
                     "1048576 262144 float sum -1 73.93\n"),
             Catch::Contains("x.txt: line 3") && Catch::Contains("in place"));
  CHECK_THAT(refusal("# Collective test starting: all_reduce_perf\n" + ranks +
                     "1048576 262144 float sum -1 fast 14.18 26.59 0 72.83 14.40 27.00 0\n"),
             Catch::Contains("\"fast\" is not a number"));
}
