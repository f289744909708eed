// `meshsim info`: what this build can do and which GPUs it sees.

#include <memory>

#include <fmt/format.h>

#include "core/json.h"
#include "runtime/gpu_info.h"
#include "tools/cli/commands.h"

namespace meshsim::cli {

void add_info_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("info", "Version, build options, and the GPUs this machine has");
  cmd->add_flag("--json", *json, "Print one JSON document");
  cmd->callback([json] {
    const auto rt = runtime::query_runtime();
    if (*json) {
      Json gpus = Json::array();
      for (const auto& g : rt.gpus)
        gpus.push_back(Json{{"index", g.index},
                            {"name", g.name},
                            {"memory_bytes", g.memory_bytes},
                            {"sm_count", g.sm_count},
                            {"compute_capability", fmt::format("{}.{}", g.compute_major, g.compute_minor)}});
      fmt::print("{}", dump_json(Json{{"version", MESHSIM_VERSION},
                                      {"cuda_built", rt.cuda_built},
                                      {"cuda_runtime_version", rt.cuda_runtime_version},
                                      {"driver_version", rt.driver_version},
                                      {"status", rt.status},
                                      {"gpus", std::move(gpus)}}));
      return;
    }
    fmt::print("meshsim {}\n", MESHSIM_VERSION);
    fmt::print("CUDA backend: {}\n",
               rt.cuda_built ? fmt::format("built (CUDA runtime {}.{})", rt.cuda_runtime_version / 1000,
                                           (rt.cuda_runtime_version % 1000) / 10)
                             : std::string("not built"));
    if (rt.gpus.empty()) fmt::print("GPUs: none ({})\n", rt.status);
    for (const auto& g : rt.gpus)
      fmt::print("GPU {}: {}, {:.1f} GiB, {} SMs, compute {}.{}\n", g.index, g.name,
                 static_cast<double>(g.memory_bytes) / (1024.0 * 1024.0 * 1024.0), g.sm_count,
                 g.compute_major, g.compute_minor);
  });
}

}  // namespace meshsim::cli
