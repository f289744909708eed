#pragma once
// Helpers shared by the CUDA-built parts of the runtime (never included
// without CUDA): error checks, cuBLAS loaded at run time, GPU model names.

#include <cstdint>
#include <cublas_api.h>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "core/units.h"
#include "runtime/dynlib.h"
#include "runtime/layout.h"
#include "sim/plan.h"

namespace meshsim::runtime {

/// Throws UsageError "what: <CUDA error string>" unless e is cudaSuccess.
void cuda_check(cudaError_t e, const char* what);

/// "NVIDIA H200" → "H200" (the compute model's names); the name itself if unknown.
[[nodiscard]] std::string gpu_model_of(const std::string& device_name);

/// cuBLAS, if the machine has it (libcublas.so.13/.12/.so).
class Cublas {
 public:
  Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  ~Cublas();
  [[nodiscard]] bool available() const { return handle_ != nullptr; }
  [[nodiscard]] const std::string& why_not() const { return why_not_; }
  /// C = A·B, all n x n, in `dtype`'s class (see cuda_backend.h), on `stream`;
  /// the three matrices live in `work` (3·n²·element bytes).
  void gemm(std::int64_t n, sim::DType dtype, void* work, cudaStream_t stream);
  /// Bytes gemm() needs for n.
  [[nodiscard]] static std::int64_t work_bytes(std::int64_t n, sim::DType dtype);

 private:
  using Create = cublasStatus_t (*)(cublasHandle_t*);
  using Destroy = cublasStatus_t (*)(cublasHandle_t);
  using SetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                    int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                    cublasGemmAlgo_t);
  std::unique_ptr<DynLib> lib_;
  cublasHandle_t handle_ = nullptr;
  Destroy destroy_ = nullptr;
  SetStream set_stream_ = nullptr;
  GemmEx gemm_ = nullptr;
  std::string why_not_;
};

/// Enqueues one strided copy (layout.h) between two device pointers (of any
/// devices of this process): one cudaMemcpyAsync, 2-D or 3-D copy, or 2-D
/// copies per outer index (cuda_backend.h).
void enqueue_copy(std::byte* dst, const std::byte* src, const StridedCopy& c, cudaStream_t s);

/// Square GEMM size whose 2n³ FLOPs come closest to `flops` (a multiple of 64, at least 64).
[[nodiscard]] std::int64_t gemm_size_for(double flops);

}  // namespace meshsim::runtime
