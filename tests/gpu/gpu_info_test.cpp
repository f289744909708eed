// On a GPU machine: the runtime must report at least one GPU with a name,
// memory and SMs (an H100/H200 has 80+ GB and 132 SMs). Without a GPU:
// exit 77 (skipped).

#include "runtime/gpu_info.h"

#include <fmt/format.h>

int main() {
  const auto info = meshsim::runtime::query_runtime();
  if (!info.cuda_built || info.gpus.empty()) {
    fmt::print("skipped: {}\n", info.status);
    return 77;
  }
  int bad = 0;
  for (const auto& g : info.gpus) {
    fmt::print("GPU {}: {} ({} bytes, {} SMs, compute {}.{})\n", g.index, g.name, g.memory_bytes, g.sm_count,
               g.compute_major, g.compute_minor);
    if (g.name.empty() || g.memory_bytes < (std::size_t{1} << 30) || g.sm_count < 1 || g.compute_major < 3)
      ++bad;
  }
  fmt::print("{} passed, {} failed\n", info.gpus.size() - static_cast<std::size_t>(bad), bad);
  return bad == 0 ? 0 : 1;
}
