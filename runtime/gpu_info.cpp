#include "runtime/gpu_info.h"

#ifdef MESHSIM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <fmt/format.h>

namespace meshsim::runtime {

RuntimeInfo query_runtime() {
  RuntimeInfo info;
#ifdef MESHSIM_HAVE_CUDA
  info.cuda_built = true;
  cudaRuntimeGetVersion(&info.cuda_runtime_version);
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess || info.driver_version == 0) {
    info.status = "no CUDA driver on this machine";
    return info;
  }
  int n = 0;
  if (const cudaError_t err = cudaGetDeviceCount(&n); err != cudaSuccess) {
    info.status = fmt::format("no usable GPU ({})", cudaGetErrorString(err));
    return info;
  }
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    info.gpus.push_back(GpuInfo{i, p.name, p.totalGlobalMem, p.multiProcessorCount, p.major, p.minor});
  }
  if (info.gpus.empty()) info.status = "the CUDA driver reports no GPU";
#else
  info.status = "built without CUDA (configure with -DMESHSIM_CUDA=ON and a CUDA toolkit)";
#endif
  return info;
}

}  // namespace meshsim::runtime
