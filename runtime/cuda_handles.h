#pragma once
// Owners of CUDA resources (never included without CUDA): each holds one
// handle, releases it once when destroyed or reset, and can only be moved.
// Release errors are ignored: owners release on the way out, often while
// another error is being reported.

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include "runtime/cuda_util.h"

namespace meshsim::runtime {

template <typename H, cudaError_t (*Release)(H)>
class CudaOwned {
 public:
  CudaOwned() = default;
  explicit CudaOwned(H h) : h_(h) {}
  CudaOwned(const CudaOwned&) = delete;
  CudaOwned& operator=(const CudaOwned&) = delete;
  CudaOwned(CudaOwned&& o) noexcept : h_(std::exchange(o.h_, H{})) {}
  CudaOwned& operator=(CudaOwned&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, H{});
    }
    return *this;
  }
  ~CudaOwned() { reset(); }

  void reset() {
    if (h_ != H{}) (void)Release(h_);
    h_ = H{};
  }
  [[nodiscard]] H get() const { return h_; }

 private:
  H h_{};
};

using CudaStream = CudaOwned<cudaStream_t, cudaStreamDestroy>;
using CudaEvent = CudaOwned<cudaEvent_t, cudaEventDestroy>;

/// Device memory from cudaMalloc, or pinned host memory from cudaMallocHost.
class CudaMemory {
 public:
  CudaMemory() = default;
  /// `bytes` on the current device (none for 0); UsageError naming `what` on failure.
  static CudaMemory device(std::size_t bytes, const char* what) {
    void* p = nullptr;
    if (bytes > 0) cuda_check(cudaMalloc(&p, bytes), what);
    return CudaMemory(p, false);
  }
  /// Takes over device memory that cudaMalloc returned.
  static CudaMemory adopt(void* device_pointer) { return CudaMemory(device_pointer, false); }
  static CudaMemory pinned_host(std::size_t bytes, const char* what) {
    void* p = nullptr;
    if (bytes > 0) cuda_check(cudaMallocHost(&p, bytes), what);
    return CudaMemory(p, true);
  }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;
  CudaMemory(CudaMemory&& o) noexcept : p_(std::exchange(o.p_, nullptr)), host_(o.host_) {}
  CudaMemory& operator=(CudaMemory&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      host_ = o.host_;
    }
    return *this;
  }
  ~CudaMemory() { reset(); }

  void reset() {
    if (p_ != nullptr) (void)(host_ ? cudaFreeHost(p_) : cudaFree(p_));
    p_ = nullptr;
  }
  [[nodiscard]] std::byte* get() const { return static_cast<std::byte*>(p_); }

 private:
  CudaMemory(void* p, bool host) : p_(p), host_(host) {}
  void* p_ = nullptr;
  bool host_ = false;
};

/// A non-blocking stream on the current device.
[[nodiscard]] inline CudaStream new_stream() {
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return CudaStream(s);
}

/// An event on the current device.
[[nodiscard]] inline CudaEvent new_event() {
  cudaEvent_t e = nullptr;
  cuda_check(cudaEventCreate(&e), "cudaEventCreate");
  return CudaEvent(e);
}

}  // namespace meshsim::runtime
