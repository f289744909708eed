#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "topology/topology_json.h"

using namespace meshsim;

// tests/data/bad_topologies/expected.tsv: file <TAB> JSON path <TAB> message
// fragment. Each file must be rejected with a ConfigError that names the
// file and exactly that path, and whose message contains the fragment.
TEST_CASE("malformed topology files are rejected with their JSON path", "[json][bad-input]") {
  const std::string dir = std::string(MESHSIM_TEST_DATA) + "/bad_topologies/";
  std::ifstream list(dir + "expected.tsv");
  REQUIRE(list);
  std::string line;
  int cases = 0;
  while (std::getline(list, line)) {
    if (line.empty()) continue;
    std::istringstream row(line);
    std::string file, path, fragment;
    std::getline(row, file, '\t');
    std::getline(row, path, '\t');
    std::getline(row, fragment);
    ++cases;
    INFO(file);
    try {
      (void)topology::load_topology_file(dir + file);
      FAIL("accepted a malformed topology");
    } catch (const ConfigError& e) {
      CHECK(e.json_path() == path);
      CHECK_THAT(e.message(), Catch::Matchers::Contains(fragment));
      CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains(file));
    }
  }
  CHECK(cases >= 10);
}
