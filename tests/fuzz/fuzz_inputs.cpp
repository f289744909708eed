// A libFuzzer target over every input reader: the first byte picks the
// reader, the rest is its input. A reader may accept the input or refuse
// it with a user-facing error (meshsim::Error: exit status 2); anything
// else -- an internal error, std::bad_alloc, a crash, a sanitizer report --
// stops the fuzzer with the input that caused it. Loaded plans are also
// simulated on a small cluster when their devices exist there.
//   build/asan/tests/fuzz/fuzz_inputs CORPUS_DIR -max_total_time=60
// (tests/fuzz/run_fuzz.sh builds a seed corpus from the bundled inputs).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/json.h"
#include "plan/calibration.h"
#include "plan/plan_json.h"
#include "planner/model.h"
#include "sim/executor.h"
#include "topology/cluster.h"
#include "topology/nccl_xml.h"
#include "topology/topology_json.h"

using namespace meshsim;

namespace {

// Clusters of many hosts are valid and slow to build; the fuzzer looks for
// crashes, not for size, so topologies over this many hosts are skipped.
constexpr std::int64_t kMaxFuzzHosts = 64;

bool small_cluster(const Json& j) {
  if (!j.is_object() || !j.contains("cluster") || !j["cluster"].is_object()) return true;
  const Json& hosts = j["cluster"].contains("hosts") ? j["cluster"]["hosts"] : Json();
  return !hosts.is_number() || hosts.get<double>() <= static_cast<double>(kMaxFuzzHosts);
}

const topology::Topology& cluster() {
  static const topology::Topology t = [] {
    topology::ClusterSpec s;
    s.host_preset = "dgx-a100";
    s.hosts = 2;
    return topology::build_cluster(s);
  }();
  return t;
}

void read(std::uint8_t reader, std::string_view text) {
  switch (reader % 6) {
    case 0: (void)parse_json_text(text, "fuzz.json"); break;
    case 1: {
      const Json j = parse_json_text(text, "fuzz.json");
      if (small_cluster(j)) (void)topology::topology_from_json(j, "fuzz.json");
      break;
    }
    case 2: {
      const plan::Plan p = plan::plan_from_json(parse_json_text(text, "fuzz.json"), "fuzz.json");
      (void)sim::simulate(p, cluster(), {});
      break;
    }
    case 3: (void)plan::calibration_from_json(parse_json_text(text, "fuzz.json"), "fuzz.json"); break;
    case 4: (void)planner::model_from_json(parse_json_text(text, "fuzz.json"), "fuzz.json"); break;
    default: (void)topology::import_nccl_xml_text(text, "fuzz.xml", {}); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  try {
    read(data[0], std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  } catch (const Error&) {
    // Refused with a message: what a reader should do with bad input.
  }
  return 0;
}
