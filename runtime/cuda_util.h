#pragma once
// Helpers shared by the CUDA-built parts of the runtime (never included
// without CUDA): error checks, cuBLAS loaded at run time, GPU model names.

#include <cstdint>
#include <cublas_api.h>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/units.h"
#include "plan/plan.h"
#include "runtime/dynlib.h"
#include "runtime/layout.h"

namespace meshsim::runtime {

/// A CUDA event interval (milliseconds, float) as Time.
[[nodiscard]] Time ms_to_time(float ms);

/// Throws "what: <CUDA error string>" unless e is cudaSuccess: a
/// UsageError when the machine has no usable GPU or driver (the
/// environment), a DeviceError for any other failure (a device fault).
void cuda_check(cudaError_t e, const char* what);

/// The hardware catalogue's name of the GPU the driver calls `device_name`
/// (hardware::gpu_for_device_name); the name itself if unknown.
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
  /// Whether gemm() runs this dtype: fp32 and fp16/bf16 classes (f64 and
  /// int8 tasks use the busy kernel instead).
  [[nodiscard]] static bool runs(plan::DType dtype);
  /// C = A·B, all n x n, in `dtype`'s class (see cuda_backend.h), on `stream`;
  /// the three matrices live in `work` (3·n²·element bytes). `workspace`
  /// (kWorkspaceBytes, one per stream) is cuBLAS's scratch: given, cuBLAS
  /// allocates nothing while a run is enqueued (cublasSetStream would
  /// otherwise switch it back to its own pool).
  void gemm(std::int64_t n, plan::DType dtype, void* work, cudaStream_t stream, void* workspace = nullptr);
  /// `batch` products C (m x n) = A (m x k) · B (k x n), column-major, each
  /// batch's matrices one after another in `work` (A's, then B's, then C's).
  void gemm(const plan::KernelList::Gemm& g, plan::DType dtype, void* work, cudaStream_t stream,
            void* workspace = nullptr);
  /// Bytes gemm() needs for n, or for g.
  [[nodiscard]] static std::int64_t work_bytes(std::int64_t n, plan::DType dtype);
  [[nodiscard]] static std::int64_t work_bytes(const plan::KernelList::Gemm& g, plan::DType dtype);
  /// cuBLAS's recommended workspace on Hopper.
  static constexpr std::int64_t kWorkspaceBytes = std::int64_t{32} << 20;

 private:
  using Create = cublasStatus_t (*)(cublasHandle_t*);
  using Destroy = cublasStatus_t (*)(cublasHandle_t);
  using SetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
  using SetWorkspace = cublasStatus_t (*)(cublasHandle_t, void*, std::size_t);
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                    int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                    cublasGemmAlgo_t);
  using GemmBatched = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, long long, const void*,
                                         cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                         long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  void use_stream(cudaStream_t stream, void* workspace);
  std::unique_ptr<DynLib> lib_;
  cublasHandle_t handle_ = nullptr;
  Destroy destroy_ = nullptr;
  SetStream set_stream_ = nullptr;
  SetWorkspace set_workspace_ = nullptr;  // optional
  GemmEx gemm_ = nullptr;
  GemmBatched gemm_batched_ = nullptr;
  std::string why_not_;
};

class HostGate;

/// Enqueues one strided copy (layout.h) between two device pointers (of any
/// devices of this process): one cudaMemcpyAsync, 2-D or 3-D copy, or 2-D
/// copies per outer index (cuda_backend.h).
/// Strides beyond `max_pitch` (cudaDevAttrMaxPitch) are copied a row at a time.
/// With a `gate`, each call is first admitted by it (HostGate::admit).
void enqueue_copy(std::byte* dst, const std::byte* src, const StridedCopy& c, cudaStream_t s,
                  HostGate* gate = nullptr, std::int64_t max_pitch = std::int64_t{1} << 31);

/// Fills `bytes` of GEMM operands with non-zero values that are finite as
/// f32, f16 and bf16 (GEMMs on zeros draw less power and clock higher than
/// on real data, which would flatter the measured efficiency).
void fill_gemm_operands(void* work, std::int64_t bytes);

/// The GEMMs that stand for `flops`: `count` square GEMMs of size n (a
/// multiple of 64, 64 ≤ n ≤ 8192) whose 2·n³·count comes closest.
struct GemmShape {
  std::int64_t n = 64;
  std::int64_t count = 1;
};
[[nodiscard]] GemmShape gemm_shape_for(double flops);

/// A flag in mapped host memory and the gate kernel that waits for it: a
/// run's timing event is recorded only once the host has enqueued every
/// task, so host-side enqueueing does not show in the measured timeline.
///
/// Two things must never wait behind a closed gate, or the host blocks in a
/// CUDA call that only the gate's opening would release, and the run hangs:
///   - more than about a thousand pending operations on one stream: the
///     host then blocks in the next call until the stream drains. admit()
///     counts the calls enqueued since close_on() and opens the gate first
///     when they would pass kMaxHeld (then later tasks' times include the
///     host's enqueueing, and notes() says so);
///   - the first use of a kernel (lazy module loading may synchronise the
///     context) or of an NCCL connection: so the first hold() after
///     loaded() leaves the streams unheld.
class HostGate {
 public:
  /// Calls held behind a closed gate at most: well under a stream's depth
  /// even when every call lands in one hardware queue.
  static constexpr std::int64_t kMaxHeld = 512;

  HostGate();
  HostGate(const HostGate&) = delete;
  HostGate& operator=(const HostGate&) = delete;
  ~HostGate();
  /// Closes the gate and enqueues its kernel on `s` (of the current device).
  void close_on(cudaStream_t s);

  /// A run's hold: opens the gate when it ends (also on an exception).
  class Hold {
   public:
    explicit Hold(HostGate& g) : g_(g) {}
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { g_.open(); }

   private:
    HostGate& g_;
  };
  /// A backend loaded a plan: its next run is not held (see above).
  void loaded() { next_unheld_ = true; }
  /// For one run of a loaded plan: closes the gate on `s` unless this is
  /// the first run since loaded().
  [[nodiscard]] Hold hold(cudaStream_t s);
  /// What the last hold() says of that run's times: nothing when the gate
  /// held every call, else why they include host-side enqueueing.
  [[nodiscard]] std::vector<std::string> notes() const;
  /// Before `calls` more CUDA calls are enqueued: opens a closed gate if
  /// the calls held would pass kMaxHeld.
  void admit(std::int64_t calls);
  /// Opens a closed gate now, as admit() does past kMaxHeld (for limits
  /// the caller counts itself).
  void open_early();
  /// Opens it: the gate kernels finish.
  void open();

 private:
  volatile int* host_ = nullptr;
  bool next_unheld_ = false;
  bool held_ = false;  // the last hold() closed the gate
  bool closed_ = false;
  bool opened_early_ = false;
  std::int64_t admitted_ = 0;
};

}  // namespace meshsim::runtime
