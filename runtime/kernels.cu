// The CUDA backend's kernels: a timed busy-wait, for compute tasks that
// give a duration (and as a stand-in for GEMMs when cuBLAS is missing),
// spinning one thread on the GPU's global nanosecond timer; and a gate that
// holds a stream until the host writes a flag in mapped host memory.

#include <cstdint>

#include "runtime/kernels.h"

namespace {

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(std::uint64_t ns) {
  const std::uint64_t t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
}

__global__ void wait_flag_kernel(const volatile int* flag) {
  while (*flag == 0) {
  }
}

}  // namespace

cudaError_t meshsim_launch_wait_flag(const volatile int* flag, cudaStream_t stream) {
  wait_flag_kernel<<<1, 1, 0, stream>>>(flag);
  return cudaGetLastError();
}

cudaError_t meshsim_launch_spin(std::uint64_t ns, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}

cudaError_t meshsim_preload_kernels() {
  cudaFuncAttributes a{};
  cudaError_t e = cudaFuncGetAttributes(&a, wait_flag_kernel);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, spin_kernel);
  return e;
}
