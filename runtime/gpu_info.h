#pragma once
// What this build of meshsim can run on: whether the CUDA backend was
// compiled in, and the GPUs the CUDA driver reports on this machine.

#include <string>
#include <vector>

namespace meshsim::runtime {

struct GpuInfo {
  int index = 0;
  std::string name;
  std::size_t memory_bytes = 0;
  int sm_count = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

struct RuntimeInfo {
  bool cuda_built = false;       // compiled with the CUDA toolkit
  int cuda_runtime_version = 0;  // e.g. 13000; 0 without CUDA
  int driver_version = 0;        // 0 when no driver is present
  std::string status;            // why no GPU is usable, when none is
  std::vector<GpuInfo> gpus;
};

/// Queries the CUDA driver; never throws (no driver, no device → empty list
/// with a status message).
[[nodiscard]] RuntimeInfo query_runtime();

}  // namespace meshsim::runtime
