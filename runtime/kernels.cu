// The CUDA backend's kernels: a timed busy-wait, for compute tasks that
// give a duration (and as a stand-in for GEMMs when cuBLAS is missing),
// spinning one thread on the GPU's global nanosecond timer; a gate that
// holds a stream until the host writes a flag in mapped host memory; and
// the element-wise sum of packed parts (sum payloads).

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

__device__ double load(const float* p) {
  return *p;
}
__device__ double load(const double* p) {
  return *p;
}
__device__ double load(const __half* p) {
  return __half2float(*p);
}
__device__ double load(const __nv_bfloat16* p) {
  return __bfloat162float(*p);
}
__device__ double load(const std::int32_t* p) {
  return *p;
}
__device__ double load(const std::int8_t* p) {
  return *p;
}
__device__ double load(const std::uint8_t* p) {
  return *p;
}

__device__ void store(float* p, double v) {
  *p = static_cast<float>(v);
}
__device__ void store(double* p, double v) {
  *p = v;
}
__device__ void store(__half* p, double v) {
  *p = __double2half(v);
}
__device__ void store(__nv_bfloat16* p, double v) {
  *p = __float2bfloat16(static_cast<float>(v));
}
// Integers: to nearest, saturated (runtime/values.cpp's encode_value).
__device__ double saturate(double v, double lo, double hi) {
  return fmin(fmax(rint(v), lo), hi);
}
__device__ void store(std::int32_t* p, double v) {
  *p = static_cast<std::int32_t>(saturate(v, -2147483648.0, 2147483647.0));
}
__device__ void store(std::int8_t* p, double v) {
  *p = static_cast<std::int8_t>(saturate(v, -128, 127));
}
__device__ void store(std::uint8_t* p, double v) {
  *p = static_cast<std::uint8_t>(saturate(v, 0, 255));
}

template <typename T>
__global__ void sum_kernel(const T* parts, int count, std::int64_t n, T* out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    double acc = 0;
    for (int j = 0; j < count; ++j) acc += load(parts + j * n + k);
    store(out + k, acc);
  }
}

template <typename T>
cudaError_t launch_sum(const void* parts, int count, std::int64_t n, void* out, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  const int grid = static_cast<int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
  sum_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(parts), count, n, static_cast<T*>(out));
  return cudaGetLastError();
}

}  // namespace

cudaError_t meshsim_launch_sum(const void* parts, int count, std::int64_t elements, int type, void* out,
                               cudaStream_t stream) {
  switch (type) {
    case kSumF32: return launch_sum<float>(parts, count, elements, out, stream);
    case kSumF16: return launch_sum<__half>(parts, count, elements, out, stream);
    case kSumBF16: return launch_sum<__nv_bfloat16>(parts, count, elements, out, stream);
    case kSumF64: return launch_sum<double>(parts, count, elements, out, stream);
    case kSumI32: return launch_sum<std::int32_t>(parts, count, elements, out, stream);
    case kSumI8: return launch_sum<std::int8_t>(parts, count, elements, out, stream);
    case kSumU8: return launch_sum<std::uint8_t>(parts, count, elements, out, stream);
    default: return cudaErrorInvalidValue;
  }
}

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
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, sum_kernel<float>);
  return e;
}
