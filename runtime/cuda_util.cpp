#include "runtime/cuda_util.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "hardware/gpus.h"
#include "runtime/kernels.h"

namespace meshsim::runtime {

Time ms_to_time(float ms) {
  return Time::ps(static_cast<std::int64_t>(static_cast<double>(ms) * 1e9));
}

namespace {

// Whether e says the machine has no usable GPU or driver, rather than a fault.
bool cuda_environment_error(cudaError_t e) {
  switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable: return true;
    default: return false;
  }
}

}  // namespace

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::string message = fmt::format("{}: {}", what, cudaGetErrorString(e));
  if (cuda_environment_error(e)) throw UsageError(std::move(message));
  throw DeviceError(std::move(message));
}

std::string gpu_model_of(const std::string& device_name) {
  const hardware::GpuSpec* g = hardware::gpu_for_device_name(device_name);
  return g != nullptr ? std::string(g->name) : device_name;
}

Cublas::Cublas() {
  lib_ = std::make_unique<DynLib>(
      std::vector<std::string>{"libcublas.so.13", "libcublas.so.12", "libcublas.so"});
  if (!lib_->loaded()) {
    why_not_ = fmt::format("cuBLAS not found ({})", lib_->error());
    return;
  }
  try {
    const auto create = lib_->function<Create>("cublasCreate_v2");
    destroy_ = lib_->function<Destroy>("cublasDestroy_v2");
    set_stream_ = lib_->function<SetStream>("cublasSetStream_v2");
    set_workspace_ = reinterpret_cast<SetWorkspace>(lib_->symbol("cublasSetWorkspace_v2"));  // NOLINT
    gemm_ = lib_->function<GemmEx>("cublasGemmEx");
    gemm_batched_ = lib_->function<GemmBatched>("cublasGemmStridedBatchedEx");
    if (create(&handle_) != CUBLAS_STATUS_SUCCESS) {
      handle_ = nullptr;
      why_not_ = "cublasCreate failed";
    }
  } catch (const UsageError& e) {
    why_not_ = e.what();
  }
}

Cublas::~Cublas() {
  if (handle_ != nullptr && destroy_ != nullptr) destroy_(handle_);
}

bool Cublas::runs(plan::DType dtype) {
  const auto c = plan::dtype_class(dtype);
  return c == plan::DTypeClass::fp32 || c == plan::DTypeClass::fp16;
}

namespace {
std::int64_t element_bytes(plan::DType dtype) {
  return plan::dtype_class(dtype) == plan::DTypeClass::fp16 ? 2 : 4;
}
cudaDataType cuda_type(plan::DType dtype) {
  if (plan::dtype_class(dtype) != plan::DTypeClass::fp16) return CUDA_R_32F;
  return dtype == plan::DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
}
// A GEMM's dimensions as cuBLAS's ints; UsageError beyond them.
int blas_dim(double v) {
  if (!(v >= 1 && v <= 2147483647.0 && v == std::floor(v)))
    throw UsageError(fmt::format("a GEMM dimension of {} is not one cuBLAS takes", v));
  return static_cast<int>(v);
}
}  // namespace

std::int64_t Cublas::work_bytes(std::int64_t n, plan::DType dtype) {
  return 3 * n * n * element_bytes(dtype);
}

std::int64_t Cublas::work_bytes(const plan::KernelList::Gemm& g, plan::DType dtype) {
  const double elems = (g.m * g.k + g.k * g.n + g.m * g.n) * g.batch;
  return static_cast<std::int64_t>(elems) * element_bytes(dtype);
}

void Cublas::use_stream(cudaStream_t stream, void* workspace) {
  MESHSIM_ASSERT(available(), "gemm without cuBLAS");
  if (set_stream_(handle_, stream) != CUBLAS_STATUS_SUCCESS) throw DeviceError("cublasSetStream failed");
  if (workspace != nullptr && set_workspace_ != nullptr &&
      set_workspace_(handle_, workspace, static_cast<std::size_t>(kWorkspaceBytes)) != CUBLAS_STATUS_SUCCESS)
    throw DeviceError("cublasSetWorkspace failed");
}

void Cublas::gemm(std::int64_t n, plan::DType dtype, void* work, cudaStream_t stream, void* workspace) {
  const auto d = static_cast<double>(n);
  gemm({d, d, d, 1}, dtype, work, stream, workspace);
}

void Cublas::gemm(const plan::KernelList::Gemm& g, plan::DType dtype, void* work, cudaStream_t stream,
                  void* workspace) {
  use_stream(stream, workspace);
  const int m = blas_dim(g.m);
  const int n = blas_dim(g.n);
  const int k = blas_dim(g.k);
  const int batch = blas_dim(g.batch);
  const cudaDataType t = cuda_type(dtype);
  const std::int64_t e = element_bytes(dtype);
  const long long sa = static_cast<long long>(m) * k;
  const long long sb = static_cast<long long>(k) * n;
  const long long sc = static_cast<long long>(m) * n;
  auto* a = static_cast<char*>(work);
  char* b = a + sa * batch * e;
  char* c = b + sb * batch * e;
  const float alpha = 1.0F;
  const float beta = 0.0F;
  const cublasStatus_t s =
      batch == 1 ? gemm_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, t, m, b, t, k, &beta, c, t, m,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                 : gemm_batched_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, t, m, sa, b, t, k, sb,
                                 &beta, c, t, m, sc, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(fmt::format("cuBLAS GEMM {}x{}x{} (batch {}) failed (status {})", m, n, k, batch,
                                  static_cast<int>(s)));
}

void enqueue_copy(std::byte* dst, const std::byte* src, const StridedCopy& c, cudaStream_t s, HostGate* gate,
                  std::int64_t max_pitch) {
  if (c.row_bytes == 0) return;
  auto admit = [gate] {
    if (gate != nullptr) gate->admit(1);
  };
  const auto width = static_cast<std::size_t>(c.row_bytes);
  bool wide = false;
  for (const auto& d : c.outer) wide = wide || d.src_stride > max_pitch || d.dst_stride > max_pitch;
  if (wide) {  // pitches the 2-D/3-D copies refuse: one copy per run
    c.for_each_row([&](std::int64_t so, std::int64_t d) {
      admit();
      cuda_check(cudaMemcpyAsync(dst + d, src + so, width, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
    });
    return;
  }
  if (c.outer.empty()) {
    admit();
    cuda_check(cudaMemcpyAsync(dst + c.dst_offset, src + c.src_offset, width, cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync");
    return;
  }
  const StridedCopy::Dim& in = c.outer.back();
  if (c.outer.size() == 2) {
    const StridedCopy::Dim& out = c.outer.front();
    if (out.src_stride % in.src_stride == 0 && out.dst_stride % in.dst_stride == 0 && in.src_stride > 0 &&
        in.dst_stride > 0) {
      cudaMemcpy3DParms p{};
      // The pitched pointers start at the region's first byte: y walks the
      // inner outer-dimension (pitch = its stride), z the outer one
      // (slice = pitch × ysize = its stride).
      p.srcPtr =
          cudaPitchedPtr{const_cast<std::byte*>(src + c.src_offset), static_cast<std::size_t>(in.src_stride),
                         width, static_cast<std::size_t>(out.src_stride / in.src_stride)};
      p.dstPtr = cudaPitchedPtr{dst + c.dst_offset, static_cast<std::size_t>(in.dst_stride), width,
                                static_cast<std::size_t>(out.dst_stride / in.dst_stride)};
      p.extent = cudaExtent{width, static_cast<std::size_t>(in.count), static_cast<std::size_t>(out.count)};
      p.kind = cudaMemcpyDeviceToDevice;
      if (gate != nullptr) gate->admit(out.count);  // the driver may issue it a slice at a time
      cuda_check(cudaMemcpy3DAsync(&p, s), "cudaMemcpy3DAsync");
      return;
    }
  }
  // 2-D copies over the innermost outer dimension, one per index of the others.
  StridedCopy rest = c;
  rest.outer.pop_back();
  rest.row_bytes = 1;  // for_each_row visits every combination of the remaining dimensions
  rest.for_each_row([&](std::int64_t so, std::int64_t d) {
    admit();
    cuda_check(cudaMemcpy2DAsync(dst + d, static_cast<std::size_t>(in.dst_stride), src + so,
                                 static_cast<std::size_t>(in.src_stride), width,
                                 static_cast<std::size_t>(in.count), cudaMemcpyDeviceToDevice, s),
               "cudaMemcpy2DAsync");
  });
}

void fill_gemm_operands(void* work, std::int64_t bytes) {
  // Each 16-bit unit: a random sign and 10 random low bits under the fixed
  // exponent bits 0111 0: f16 ±[0.5, 1), bf16 ±2^-15..2^-8, and as pairs an
  // f32 of the same order; finite in every reading, and as varied as data
  // (tensor cores on few distinct bit patterns draw less power).
  std::vector<std::uint16_t> chunk(std::size_t{1} << 19);
  std::uint32_t x = 0x9E3779B9U;
  for (auto& v : chunk) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v = static_cast<std::uint16_t>((x & 0x8000U) | 0x3800U | ((x >> 3) & 0x3FFU));
  }
  const auto step = static_cast<std::int64_t>(chunk.size() * sizeof(std::uint16_t));
  for (std::int64_t off = 0; off < bytes; off += step)
    cuda_check(cudaMemcpy(static_cast<char*>(work) + off, chunk.data(),
                          static_cast<std::size_t>(std::min(step, bytes - off)), cudaMemcpyHostToDevice),
               "cudaMemcpy (GEMM operands)");
}

GemmShape gemm_shape_for(double flops) {
  constexpr std::int64_t kMax = 8192;
  const double f = std::max(flops, 0.0);
  GemmShape g;
  const double max_flops = 2.0 * static_cast<double>(kMax) * kMax * kMax;
  if (f > max_flops) {
    g.n = kMax;
    g.count = std::max<std::int64_t>(1, std::llround(f / max_flops));
    return g;
  }
  const double n = std::cbrt(f / 2.0);
  g.n = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::llround(n / 64.0)) * 64, 64, kMax);
  return g;
}

HostGate::HostGate() {
  cuda_check(meshsim_preload_kernels(), "loading the gate and busy kernels");
  void* p = nullptr;
  cuda_check(cudaHostAlloc(&p, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable),
             "cudaHostAlloc (gate)");
  host_ = static_cast<volatile int*>(p);
  *host_ = 1;
}

HostGate::~HostGate() {
  open();
  (void)cudaFreeHost(const_cast<int*>(host_));
}

void HostGate::close_on(cudaStream_t s) {
  *host_ = 0;
  closed_ = true;
  opened_early_ = false;
  admitted_ = 0;
  void* dev = nullptr;
  cuda_check(cudaHostGetDevicePointer(&dev, const_cast<int*>(host_), 0), "cudaHostGetDevicePointer");
  cuda_check(meshsim_launch_wait_flag(static_cast<const volatile int*>(dev), s), "gate kernel");
}

void HostGate::admit(std::int64_t calls) {
  admitted_ += calls;
  if (admitted_ > kMaxHeld) open_early();
}

void HostGate::open_early() {
  if (!closed_) return;
  open();
  opened_early_ = true;
}

void HostGate::open() {
  closed_ = false;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *host_ = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

HostGate::Hold HostGate::hold(cudaStream_t s) {
  held_ = !next_unheld_;
  next_unheld_ = false;
  if (held_) close_on(s);
  return Hold(*this);
}

std::vector<std::string> HostGate::notes() const {
  if (!held_)
    return {
        "the first run after loading is not gated (kernels and NCCL connections load on first use), "
        "so its times include host-side enqueueing; run with --warmup 1 or more"};
  if (opened_early_)
    return {
        fmt::format("the gate opened after {} CUDA calls, before all {} were enqueued, so later tasks' "
                    "times include host-side enqueueing",
                    kMaxHeld, admitted_)};
  return {};
}

}  // namespace meshsim::runtime
