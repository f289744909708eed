// meshsim calibrate --backend cuda (calibrate.h describes what it measures).

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "runtime/calibrate.h"
#include "runtime/cuda_handles.h"
#include "runtime/cuda_util.h"
#include "runtime/kernels.h"

namespace meshsim::runtime {

namespace {

class Timer {
 public:
  /// With a gate, each timed batch is enqueued behind it, so the host's
  /// enqueueing speed does not set the time of small copies and launches.
  explicit Timer(cudaStream_t s, HostGate* gate = nullptr)
      : s_(s), gate_(gate), a_(new_event()), b_(new_event()) {}
  /// Best of `repeats` timings of `batch` back-to-back calls of f, per call.
  template <typename F>
  Time best(int repeats, int batch, F&& f) {
    f();  // warm-up
    cuda_check(cudaStreamSynchronize(s_), "warm-up");
    Time best = Time::max();
    for (int r = 0; r < repeats; ++r) {
      if (gate_ != nullptr) gate_->close_on(s_);
      cuda_check(cudaEventRecord(a_.get(), s_), "cudaEventRecord");
      for (int k = 0; k < batch; ++k) f();
      cuda_check(cudaEventRecord(b_.get(), s_), "cudaEventRecord");
      if (gate_ != nullptr) gate_->open();
      cuda_check(cudaEventSynchronize(b_.get()), "cudaEventSynchronize");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, a_.get(), b_.get()), "cudaEventElapsedTime");
      best = std::min(best, Time::ps(ms_to_time(ms).count_ps() / batch));
    }
    return best;
  }

 private:
  cudaStream_t s_;
  HostGate* gate_;
  CudaEvent a_;
  CudaEvent b_;
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

// What the measurements on GPU 0 share: a stream, two device buffers and a
// pinned host buffer of the largest size, and the gate.
struct Bench {
  Bench(const CalibrateOptions& opts, std::size_t bytes) : o(opts), max(bytes) {}
  const CalibrateOptions& o;
  std::size_t max;
  CudaStream s = new_stream();
  CudaMemory a = CudaMemory::device(max, "cudaMalloc");
  CudaMemory b = CudaMemory::device(max, "cudaMalloc");
  CudaMemory host = CudaMemory::pinned_host(max, "cudaMallocHost");
  HostGate gate;
  void say(const std::string& line) const {
    if (o.progress) o.progress(line);
  }
};

Json machine_of(const cudaDeviceProp& prop, int gpus) {
  int driver = 0;
  int runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  return Json{{"gpu", prop.name},
              {"gpu_model", gpu_model_of(prop.name)},
              {"gpus", gpus},
              {"sms", prop.multiProcessorCount},
              {"memory_bytes", prop.totalGlobalMem},
              {"compute_capability", fmt::format("{}.{}", prop.major, prop.minor)},
              {"driver", driver},
              {"runtime", runtime}};
}

// Eight streams copying an eighth of the largest size each, at once: the aggregate rate.
Bandwidth concurrent_copies(Bench& x) {
  constexpr int kStreams = 8;
  std::vector<CudaStream> ss;
  std::vector<CudaEvent> ends;
  for (int k = 0; k < kStreams; ++k) {
    ss.push_back(new_stream());
    ends.push_back(new_event());
  }
  const CudaEvent go = new_event();
  const std::size_t piece = x.max / kStreams;
  Time best = Time::max();
  for (int r = 0; r < x.o.repeats + 1; ++r) {
    cuda_check(cudaEventRecord(go.get(), x.s.get()), "cudaEventRecord");
    for (std::size_t k = 0; k < ss.size(); ++k) {
      const std::size_t off = k * piece;
      cuda_check(cudaStreamWaitEvent(ss[k].get(), go.get(), 0), "cudaStreamWaitEvent");
      cuda_check(
          cudaMemcpyAsync(x.b.get() + off, x.a.get() + off, piece, cudaMemcpyDeviceToDevice, ss[k].get()),
          "cudaMemcpyAsync");
      cuda_check(cudaEventRecord(ends[k].get(), ss[k].get()), "cudaEventRecord");
    }
    float worst = 0;
    for (const auto& e : ends) {
      cuda_check(cudaEventSynchronize(e.get()), "cudaEventSynchronize");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, go.get(), e.get()), "cudaEventElapsedTime");
      worst = std::max(worst, ms);
    }
    if (r > 0) best = std::min(best, ms_to_time(worst));  // the first is a warm-up
  }
  const Bandwidth agg =
      plan::round_rate(static_cast<double>(piece * kStreams) / std::max(best.seconds(), 1e-12));
  x.say(fmt::format("device copies on {} streams at once: {} in all", kStreams, human_string(agg)));
  return agg;
}

// Every ordered peer pair: the stream, the source buffer and the timing
// events of a pair live on its source GPU.
std::vector<plan::PeerFit> peer_fits(Bench& x, int gpus) {
  std::vector<plan::PeerFit> out;
  for (int i = 0; i < gpus && gpus > 1; ++i) {
    cuda_check(cudaSetDevice(i), "cudaSetDevice");
    const CudaStream si = new_stream();
    const CudaMemory src = CudaMemory::device(x.max, "cudaMalloc (peer source)");
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
      cuda_check(cudaSetDevice(j), "cudaSetDevice");
      const CudaMemory remote = CudaMemory::device(x.max, "cudaMalloc (peer)");
      cuda_check(cudaSetDevice(i), "cudaSetDevice");
      std::vector<plan::CopyPoint> pts;
      Timer t(si.get(), &x.gate);
      for (Bytes size : sweep_sizes(x.o.min_size, x.o.max_size))
        pts.push_back({size, t.best(x.o.repeats, batch_for(size), [&] {
                         cuda_check(cudaMemcpyPeerAsync(remote.get(), j, src.get(), i,
                                                        static_cast<std::size_t>(size.count()), si.get()),
                                    "cudaMemcpyPeerAsync");
                       })});
      out.push_back({i, j, plan::fit_copy(std::move(pts))});
      x.say(fmt::format("GPU {} -> GPU {}: {}", i, j, human_string(out.back().fit.bandwidth)));
    }
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice");
  return out;
}

// cuBLAS and its workspace, shared by the GEMM measurements.
struct Gemms {
  Bench& x;
  Cublas& blas;
  const CudaMemory& workspace;

  /// The best of the repeats of `calls` back-to-back calls of one GEMM, per
  /// call, on fresh operands like data (fill_gemm_operands); nullopt when its
  /// operands do not fit in the GPU's free memory.
  std::optional<Time> time(plan::DType dt, const plan::KernelList::Gemm& g, int calls) const {
    const auto bytes = static_cast<std::size_t>(Cublas::work_bytes(g, dt));
    void* w = nullptr;
    if (cudaMalloc(&w, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return std::nullopt;
    }
    const CudaMemory work = CudaMemory::adopt(w);
    fill_gemm_operands(w, static_cast<std::int64_t>(bytes));
    Timer t(x.s.get(), &x.gate);
    return t.best(x.o.repeats, calls, [&] { blas.gemm(g, dt, w, x.s.get(), workspace.get()); });
  }
};

// Square GEMMs per dtype; the best efficiency against the peak goes to the
// dtype's class.
void measure_square_gemms(const Gemms& gemms, const std::string& model, plan::ComputeCalibration& cc) {
  const CalibrateOptions& o = gemms.x.o;
  auto peak = [&](plan::DType dt) { return o.peak_flops ? o.peak_flops(model, dt) : 0.0; };
  for (plan::DType dt : {plan::DType::f32, plan::DType::f16, plan::DType::bf16}) {
    double best_eff = 0;
    for (double n : {1024.0, 2048.0, 4096.0, 8192.0}) {
      const std::optional<Time> tm = gemms.time(dt, {n, n, n, 1}, 5);
      if (!tm) break;
      const plan::GemmPoint p{dt, {n, n, n, 1}, *tm};
      cc.points.push_back(p);
      if (peak(dt) > 0) best_eff = std::max(best_eff, p.flops() / tm->seconds() / peak(dt));
    }
    auto& slot = cc.efficiency[static_cast<std::size_t>(plan::dtype_class(dt))];  // f16 and bf16 share one
    if (best_eff > 0) slot = std::min(1.0, std::max(slot.value_or(0.0), best_eff));
    gemms.x.say(fmt::format("GEMM {}: {:.0f} % of the {} peak", plan::to_string(dt), 100 * best_eff, model));
  }
}

// Every distinct GEMM of the options' kernel lists, one at a time; each
// one's time replaces the model's for that shape.
void measure_layer_gemms(const Gemms& gemms, plan::ComputeCalibration& cc) {
  std::vector<plan::GemmPoint> todo;
  for (const plan::KernelList& k : gemms.x.o.layers)
    for (const auto& g : k.gemms) todo.push_back({k.dtype, g, Time{}});
  std::sort(todo.begin(), todo.end(), plan::gemm_before);
  todo.erase(std::unique(todo.begin(), todo.end(),
                         [](const auto& a, const auto& b) { return !plan::gemm_before(a, b); }),
             todo.end());
  if (todo.empty()) return;
  std::size_t done = 0;
  std::size_t skipped = 0;
  for (plan::GemmPoint& p : todo) {
    // Batches of at least ~0.2 ms at 500 TFLOP/s, so the events' resolution does not matter.
    const int calls = static_cast<int>(std::clamp(std::ceil(1e11 / std::max(p.flops(), 1.0)), 1.0, 100.0));
    const std::optional<Time> tm = Cublas::runs(p.dtype) ? gemms.time(p.dtype, p.shape, calls) : std::nullopt;
    if (!tm) {  // a dtype cuBLAS does not run here, or too large for what is free: left to the model
      ++skipped;
      continue;
    }
    p.time = *tm;
    cc.points.push_back(p);
    if (++done % 50 == 0) gemms.x.say(fmt::format("layer GEMMs: {} of {} timed", done, todo.size()));
  }
  gemms.x.say(
      fmt::format("layer GEMMs: {} timed{}", done,
                  skipped > 0 ? fmt::format(", {} left to the model (dtype or memory)", skipped) : ""));
}

// The square GEMMs, then the layers' GEMMs, through one cuBLAS handle.
void measure_gemms(Bench& x, const std::string& model, plan::ComputeCalibration& cc) {
  Cublas blas;
  if (!blas.available()) {
    x.say(fmt::format("GEMM not measured: {}", blas.why_not()));
    return;
  }
  const CudaMemory workspace =
      CudaMemory::device(static_cast<std::size_t>(Cublas::kWorkspaceBytes), "cudaMalloc (cuBLAS)");
  const Gemms gemms{x, blas, workspace};
  measure_square_gemms(gemms, model, cc);
  measure_layer_gemms(gemms, cc);
}

}  // namespace

plan::Calibration calibrate_cuda(const CalibrateOptions& o) {
  int gpus = 0;
  cuda_check(cudaGetDeviceCount(&gpus), "no usable GPU");
  if (gpus == 0) throw UsageError("no GPU on this machine");
  cuda_check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const std::string model = gpu_model_of(prop.name);
  plan::Calibration c;
  c.backend = "cuda";
  c.machine = machine_of(prop, gpus);
  Bench x(o, static_cast<std::size_t>(o.max_size.count()));
  cuda_check(cudaMemset(x.a.get(), 1, x.max), "cudaMemset");
  c.copy = sweep(o, x.s.get(), x.b.get(), x.a.get(), cudaMemcpyDeviceToDevice, x.gate);
  x.say(fmt::format("device copy: {} per copy, latency {}", human_string(c.copy->bandwidth),
                    human_string(c.copy->latency)));
  c.copy->aggregate_bandwidth = concurrent_copies(x);
  c.host_to_device = sweep(o, x.s.get(), x.a.get(), x.host.get(), cudaMemcpyHostToDevice, x.gate);
  c.device_to_host = sweep(o, x.s.get(), x.host.get(), x.a.get(), cudaMemcpyDeviceToHost, x.gate);
  x.say(fmt::format("host to device {}, device to host {}", human_string(c.host_to_device->bandwidth),
                    human_string(c.device_to_host->bandwidth)));
  c.peers = peer_fits(x, gpus);
  // Launch overhead: an empty busy kernel, 256 times back to back (behind
  // the gate: fewer than HostGate::kMaxHeld).
  Timer launches(x.s.get(), &x.gate);
  const Time launch =
      launches.best(o.repeats, 256, [&] { cuda_check(meshsim_launch_spin(0, x.s.get()), "busy kernel"); });
  x.say(fmt::format("kernel launch {}", human_string(launch)));
  plan::ComputeCalibration cc;
  cc.gpu_model = model;
  cc.launch_overhead = launch;
  cc.memory_bandwidth = c.copy->bandwidth * 2;  // a copy reads and writes each byte
  measure_gemms(x, model, cc);
  if (o.peak_flops && o.peak_flops(model, plan::DType::f32) > 0)
    c.compute.push_back(std::move(cc));
  else
    x.say(fmt::format("no built-in peaks for {}: compute efficiencies are not written", model));
  return c;
}

}  // namespace meshsim::runtime
