// meshsim calibrate --backend cuda (calibrate.h describes what it measures).

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "runtime/calibrate.h"
#include "runtime/cuda_util.h"
#include "runtime/kernels.h"

namespace meshsim::runtime {

namespace {

class Timer {
 public:
  /// With a gate, each timed batch is enqueued behind it, so the host's
  /// enqueueing speed does not set the time of small copies and launches.
  explicit Timer(cudaStream_t s, HostGate* gate = nullptr) : s_(s), gate_(gate) {
    cuda_check(cudaEventCreate(&a_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b_), "cudaEventCreate");
  }
  ~Timer() {
    (void)cudaEventDestroy(a_);
    (void)cudaEventDestroy(b_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  /// Best of `repeats` timings of `batch` back-to-back calls of f, per call.
  template <typename F>
  Time best(int repeats, int batch, F&& f) {
    f();  // warm-up
    cuda_check(cudaStreamSynchronize(s_), "warm-up");
    Time best = Time::max();
    for (int r = 0; r < repeats; ++r) {
      if (gate_ != nullptr) gate_->close_on(s_);
      cuda_check(cudaEventRecord(a_, s_), "cudaEventRecord");
      for (int k = 0; k < batch; ++k) f();
      cuda_check(cudaEventRecord(b_, s_), "cudaEventRecord");
      if (gate_ != nullptr) gate_->open();
      cuda_check(cudaEventSynchronize(b_), "cudaEventSynchronize");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, a_, b_), "cudaEventElapsedTime");
      best = std::min(best, Time::ps(ms_to_time(ms).count_ps() / batch));
    }
    return best;
  }

 private:
  cudaStream_t s_;
  HostGate* gate_;
  cudaEvent_t a_ = nullptr;
  cudaEvent_t b_ = nullptr;
};

// Batch so that small copies are timed over many calls (event resolution is ~0.5 us).
int batch_for(Bytes s) {
  return s < Bytes::MiB(1) ? 100 : s < Bytes::MiB(64) ? 10 : 1;
}

plan::CopyFit sweep(const CalibrateOptions& o, cudaStream_t s, void* dst, const void* src,
                    cudaMemcpyKind kind, HostGate& gate) {
  Timer t(s, &gate);
  std::vector<plan::CopyPoint> pts;
  for (Bytes size : sweep_sizes(o.min_size, o.max_size))
    pts.push_back({size, t.best(o.repeats, batch_for(size), [&] {
                     cuda_check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(size.count()), kind, s),
                                "cudaMemcpyAsync");
                   })});
  return plan::fit_copy(std::move(pts));
}

}  // namespace

plan::Calibration calibrate_cuda(const CalibrateOptions& o) {
  int gpus = 0;
  cuda_check(cudaGetDeviceCount(&gpus), "no usable GPU");
  if (gpus == 0) throw UsageError("no GPU on this machine");
  cuda_check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int driver = 0;
  int runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  const std::string model = gpu_model_of(prop.name);
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };

  plan::Calibration c;
  c.backend = "cuda";
  c.machine = Json{{"gpu", prop.name},
                   {"gpu_model", model},
                   {"gpus", gpus},
                   {"sms", prop.multiProcessorCount},
                   {"memory_bytes", prop.totalGlobalMem},
                   {"compute_capability", fmt::format("{}.{}", prop.major, prop.minor)},
                   {"driver", driver},
                   {"runtime", runtime}};
  const auto max = static_cast<std::size_t>(o.max_size.count());
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  void* a = nullptr;
  void* b = nullptr;
  void* host = nullptr;
  cuda_check(cudaMalloc(&a, max), "cudaMalloc");
  cuda_check(cudaMalloc(&b, max), "cudaMalloc");
  cuda_check(cudaMallocHost(&host, max), "cudaMallocHost");
  cuda_check(cudaMemset(a, 1, max), "cudaMemset");

  HostGate gate;
  c.copy = sweep(o, s, b, a, cudaMemcpyDeviceToDevice, gate);
  say(fmt::format("device copy: {} per copy, latency {}", human_string(c.copy->bandwidth),
                  human_string(c.copy->latency)));
  {
    // Eight streams copying an eighth of the largest size each, at once.
    constexpr int kStreams = 8;
    std::vector<cudaStream_t> ss(kStreams);
    for (auto& x : ss) cuda_check(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking), "cudaStreamCreate");
    cudaEvent_t go = nullptr;
    cuda_check(cudaEventCreate(&go), "cudaEventCreate");
    std::vector<cudaEvent_t> ends(kStreams);
    for (auto& e : ends) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
    const std::size_t piece = max / kStreams;
    Time best = Time::max();
    for (int r = 0; r < o.repeats + 1; ++r) {
      cuda_check(cudaEventRecord(go, s), "cudaEventRecord");
      for (int k = 0; k < kStreams; ++k) {
        const auto off = static_cast<std::size_t>(k) * piece;
        cuda_check(cudaStreamWaitEvent(ss[static_cast<std::size_t>(k)], go, 0), "cudaStreamWaitEvent");
        cuda_check(cudaMemcpyAsync(static_cast<char*>(b) + off, static_cast<char*>(a) + off, piece,
                                   cudaMemcpyDeviceToDevice, ss[static_cast<std::size_t>(k)]),
                   "cudaMemcpyAsync");
        cuda_check(cudaEventRecord(ends[static_cast<std::size_t>(k)], ss[static_cast<std::size_t>(k)]),
                   "cudaEventRecord");
      }
      float worst = 0;
      for (auto e : ends) {
        cuda_check(cudaEventSynchronize(e), "cudaEventSynchronize");
        float ms = 0;
        cuda_check(cudaEventElapsedTime(&ms, go, e), "cudaEventElapsedTime");
        worst = std::max(worst, ms);
      }
      if (r > 0) best = std::min(best, ms_to_time(worst));
    }
    c.copy->aggregate_bandwidth =
        plan::round_rate(static_cast<double>(piece * kStreams) / std::max(best.seconds(), 1e-12));
    say(fmt::format("device copies on {} streams at once: {} in all", kStreams,
                    human_string(*c.copy->aggregate_bandwidth)));
    for (auto x : ss) (void)cudaStreamDestroy(x);
    for (auto e : ends) (void)cudaEventDestroy(e);
    (void)cudaEventDestroy(go);
  }
  c.host_to_device = sweep(o, s, a, host, cudaMemcpyHostToDevice, gate);
  c.device_to_host = sweep(o, s, host, a, cudaMemcpyDeviceToHost, gate);
  say(fmt::format("host to device {}, device to host {}", human_string(c.host_to_device->bandwidth),
                  human_string(c.device_to_host->bandwidth)));

  // Every ordered peer pair, when there are several GPUs: the stream, the
  // source buffer and the timing events of a pair live on its source GPU.
  for (int i = 0; i < gpus; ++i) {
    if (gpus < 2) break;
    cuda_check(cudaSetDevice(i), "cudaSetDevice");
    cudaStream_t si = nullptr;
    void* src = nullptr;
    cuda_check(cudaStreamCreateWithFlags(&si, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaMalloc(&src, max), "cudaMalloc (peer source)");
    for (int j = 0; j < gpus; ++j) {
      if (i == j) continue;
      int ok = 0;
      (void)cudaDeviceCanAccessPeer(&ok, i, j);
      cuda_check(cudaSetDevice(i), "cudaSetDevice");
      if (ok != 0) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
          cuda_check(e, "cudaDeviceEnablePeerAccess");
        (void)cudaGetLastError();
      }
      void* remote = nullptr;
      cuda_check(cudaSetDevice(j), "cudaSetDevice");
      cuda_check(cudaMalloc(&remote, max), "cudaMalloc (peer)");
      cuda_check(cudaSetDevice(i), "cudaSetDevice");
      std::vector<plan::CopyPoint> pts;
      {
        Timer t(si, &gate);
        for (Bytes size : sweep_sizes(o.min_size, o.max_size))
          pts.push_back({size, t.best(o.repeats, batch_for(size), [&] {
                           cuda_check(cudaMemcpyPeerAsync(remote, j, src, i,
                                                          static_cast<std::size_t>(size.count()), si),
                                      "cudaMemcpyPeerAsync");
                         })});
      }
      c.peers.push_back({i, j, plan::fit_copy(std::move(pts))});
      say(fmt::format("GPU {} -> GPU {}: {}", i, j, human_string(c.peers.back().fit.bandwidth)));
      cuda_check(cudaSetDevice(j), "cudaSetDevice");
      (void)cudaFree(remote);
    }
    cuda_check(cudaSetDevice(i), "cudaSetDevice");
    (void)cudaFree(src);
    (void)cudaStreamDestroy(si);
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice");

  // Launch overhead: an empty busy kernel, 256 times back to back (behind
  // the gate: fewer than HostGate::kMaxHeld).
  Timer launches(s, &gate);
  const Time launch =
      launches.best(o.repeats, 256, [&] { cuda_check(meshsim_launch_spin(0, s), "busy kernel"); });
  plan::ComputeCalibration cc;
  cc.gpu_model = model;
  cc.launch_overhead = launch;
  cc.memory_bandwidth = c.copy->bandwidth * 2;  // a copy reads and writes each byte
  say(fmt::format("kernel launch {}", human_string(launch)));

  Cublas blas;
  void* workspace = nullptr;
  cuda_check(cudaMalloc(&workspace, static_cast<std::size_t>(Cublas::kWorkspaceBytes)),
             "cudaMalloc (cuBLAS)");
  auto peak = [&](plan::DType dt) { return o.peak_flops ? o.peak_flops(model, dt) : 0.0; };
  const bool peaks = peak(plan::DType::f32) > 0;
  if (!blas.available()) {
    say(fmt::format("GEMM not measured: {}", blas.why_not()));
  } else {
    for (plan::DType dt : {plan::DType::f32, plan::DType::f16, plan::DType::bf16}) {
      double best_eff = 0;
      for (std::int64_t n : {1024, 2048, 4096, 8192}) {
        const auto bytes = static_cast<std::size_t>(Cublas::work_bytes(n, dt));
        void* w = nullptr;
        if (cudaMalloc(&w, bytes) != cudaSuccess) {
          (void)cudaGetLastError();
          break;
        }
        fill_gemm_operands(w, static_cast<std::int64_t>(bytes));
        Timer t(s, &gate);
        const Time tm = t.best(o.repeats, 5, [&] { blas.gemm(n, dt, w, s, workspace); });
        (void)cudaFree(w);
        const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
        cc.points.push_back({dt, n, flops, tm});
        if (peaks) best_eff = std::max(best_eff, flops / tm.seconds() / peak(dt));
      }
      auto& slot = cc.efficiency[static_cast<std::size_t>(plan::dtype_class(dt))];  // f16 and bf16 share one
      if (peaks && best_eff > 0) slot = std::min(1.0, std::max(slot.value_or(0.0), best_eff));
      say(fmt::format("GEMM {}: {:.0f} % of the {} peak", plan::to_string(dt), 100 * best_eff, model));
    }
  }
  if (peaks)
    c.compute.push_back(std::move(cc));
  else
    say(fmt::format("no built-in peaks for {}: compute efficiencies are not written", model));
  (void)cudaFree(workspace);
  (void)cudaFree(a);
  (void)cudaFree(b);
  (void)cudaFreeHost(host);
  (void)cudaStreamDestroy(s);
  return c;
}

}  // namespace meshsim::runtime
