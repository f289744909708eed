// A libFuzzer target over every input reader: the first byte picks the
// reader (mod 11: JSON, topology, plan, calibration, model, NCCL XML, and
// the study and search-space files, which are read from a file), the rest
// is its input. A reader may accept the input or refuse
// it with a user-facing error (meshsim::Error: exit status 2); anything
// else -- an internal error, std::bad_alloc, a crash, a sanitizer report --
// stops the fuzzer with the input that caused it. Loaded plans are also
// simulated on a small cluster when their devices exist there.
//   build/asan/tests/fuzz/fuzz_inputs CORPUS_DIR -max_total_time=60
// (tests/fuzz/run_fuzz.sh builds a seed corpus from the bundled inputs).

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

#include "core/error.h"
#include "core/json.h"
#include "model/model.h"
#include "plan/calibration.h"
#include "plan/plan_json.h"
#include "search/space_file.h"
#include "sim/executor.h"
#include "studies/collective_study.h"
#include "studies/pipeline_study.h"
#include "studies/redistribution_study.h"
#include "studies/reshard_study.h"
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

// The same for study and space files, read as text: the value of any
// "hosts" key -- a number, or a list of numbers -- over kMaxFuzzHosts skips
// it (the text after the value is not looked at).
bool few_hosts(std::string_view text) {
  for (std::size_t at = text.find("\"hosts\""); at != std::string_view::npos;
       at = text.find("\"hosts\"", at + 1)) {
    std::size_t i = at + 7;
    while (i < text.size() && (text[i] == ' ' || text[i] == ':')) ++i;
    const bool list = i < text.size() && text[i] == '[';
    std::int64_t n = 0;
    for (i += list ? 1 : 0; i < text.size(); ++i) {
      if (std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
        n = n * 10 + (text[i] - '0');
        if (n > kMaxFuzzHosts) return false;
      } else if (list && (text[i] == ',' || text[i] == ' ')) {
        n = 0;
      } else {
        break;  // the end of the value
      }
    }
  }
  return true;
}

// The file readers take a path: the input goes to this process's own
// studies/ folder, beside links to the bundled models/ and topologies/, so
// that a study naming "../models/x.json" finds it as it would in configs/.
std::string as_file(std::string_view text) {
  static const std::string path = [] {
    const std::string dir =  // ($TMPDIR: run_fuzz.sh points it at its own folder)
        (std::filesystem::temp_directory_path() / ("meshsim-fuzz-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir + "/studies");
    for (const char* sub : {"models", "topologies"}) {
      std::error_code ignored;
      std::filesystem::create_directory_symlink(std::string(MESHSIM_SOURCE_DIR) + "/configs/" + sub,
                                                dir + "/" + sub, ignored);
    }
    return dir + "/studies/input.json";
  }();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
  return path;
}

// The study file `file` parsed, as a study kind's loader takes it (the
// document lives until the next call).
JsonCursor study_root(const std::string& file) {
  static Json doc;
  doc = read_json_file(file);
  return JsonCursor(doc, file);
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
  if (reader % 11 >= 6 && !few_hosts(text)) return;
  switch (reader % 11) {
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
    case 4: (void)model::model_from_json(parse_json_text(text, "fuzz.json"), "fuzz.json"); break;
    case 5: (void)topology::import_nccl_xml_text(text, "fuzz.xml", {}); break;
    case 6: (void)studies::load_reshard_study(study_root(as_file(text))); break;
    case 7: (void)studies::load_pipeline_study(study_root(as_file(text))); break;
    case 8: (void)studies::load_collective_study(study_root(as_file(text))); break;
    case 9: (void)studies::load_redistribution_study(study_root(as_file(text))); break;
    default: (void)search::load_space_file(as_file(text)); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  try {
    read(data[0], std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  } catch (const Error& e) {
    // Refused with a message: what a reader should do with bad input
    // (MESHSIM_FUZZ_VERBOSE=1 prints it, to see what a seed does).
    static const bool verbose = std::getenv("MESHSIM_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "refused: %s\n", e.what());
  }
  return 0;
}
