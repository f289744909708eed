#pragma once
// Kernels of the CUDA backend (kernels.cu, compiled by nvcc).

#include <cstdint>

#include <cuda_runtime_api.h>

/// Enqueues a kernel that keeps one GPU thread busy for `ns` nanoseconds.
cudaError_t meshsim_launch_spin(std::uint64_t ns, cudaStream_t stream);

/// Enqueues a kernel that spins until `*flag` (mapped host memory) is non-zero.
cudaError_t meshsim_launch_wait_flag(const volatile int* flag, cudaStream_t stream);

/// Loads both kernels on the current device now (lazy loading would load
/// them at their first launch, which may wait for running kernels).
cudaError_t meshsim_preload_kernels();
