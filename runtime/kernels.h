#pragma once
// Kernels of the CUDA backend (kernels.cu, compiled by nvcc).

#include <cstdint>

#include <cuda_runtime_api.h>

/// Enqueues a kernel that keeps one GPU thread busy for `ns` nanoseconds.
cudaError_t meshsim_launch_spin(std::uint64_t ns, cudaStream_t stream);

/// Enqueues a kernel that spins until `*flag` (mapped host memory) is non-zero.
cudaError_t meshsim_launch_wait_flag(const volatile int* flag, cudaStream_t stream);

/// Element types of meshsim_launch_sum, in plan::DType order (f32, f16,
/// bf16, f64, i32, i8, u8).
enum MeshsimSumType : int { kSumF32, kSumF16, kSumBF16, kSumF64, kSumI32, kSumI8, kSumU8 };

/// Enqueues out[k] = parts[0][k] + ... + parts[count-1][k] for k < elements,
/// where part j is the `elements` values at `parts` + j·elements (packed one
/// after another), summed in double and rounded once into the type as the
/// host backend rounds (runtime/values.h: floats to nearest even, bf16
/// through f32, integers to nearest and saturated).
cudaError_t meshsim_launch_sum(const void* parts, int count, std::int64_t elements, int type, void* out,
                               cudaStream_t stream);

/// Loads the kernels on the current device now (lazy loading would load
/// them at their first launch, which may wait for running kernels).
cudaError_t meshsim_preload_kernels();
