#include "runtime/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "runtime/cuda_handles.h"
#include "runtime/cuda_util.h"
#include "runtime/kernels.h"
#include "runtime/work.h"

namespace meshsim::runtime {

namespace {

// Operations one cuBLAS GEMM call may queue (a split-K GEMM adds a memset
// and a reduction kernel).
constexpr std::int64_t kCallsPerGemm = 3;

// Whether a task runs as cuBLAS GEMMs (when cuBLAS is there), not the busy kernel.
bool runs_as_gemm(const plan::Task& t) {
  return t.kind == plan::TaskKind::compute && !t.duration && t.flops > 0 && Cublas::runs(t.dtype);
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaBackendOptions opts) : opts_(std::move(opts)) {
    int n = 0;
    cuda_check(cudaGetDeviceCount(&n), "no usable GPU");
    if (opts_.device < 0 || opts_.device >= n)
      throw UsageError(fmt::format("GPU {} does not exist ({} GPU{})", opts_.device, n, n == 1 ? "" : "s"));
    cuda_check(cudaSetDevice(opts_.device), "cudaSetDevice");
    cudaDeviceProp p{};
    cuda_check(cudaGetDeviceProperties(&p, opts_.device), "cudaGetDeviceProperties");
    gpu_name_ = p.name;
    int pitch = 0;
    if (cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, opts_.device) == cudaSuccess && pitch > 0)
      max_pitch_ = pitch;
    cublas_ = std::make_unique<Cublas>();  // after cudaSetDevice: the handle belongs to this GPU
    gate_ = std::make_unique<HostGate>();
  }

  ~CudaBackend() override { release(); }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  [[nodiscard]] std::string name() const override { return "cuda"; }
  [[nodiscard]] std::string describe() const override {
    return fmt::format("{} plan devices as virtual devices on GPU {} ({}); compute: {}", work_.devices.size(),
                       opts_.device, gpu_name_, cublas_->available() ? "cuBLAS GEMM" : cublas_->why_not());
  }

  void load(const plan::Plan& plan, const Schedule& /*schedule*/, const PlanWork& work,
            const std::vector<std::vector<std::byte>>& images) override {
    release();
    gate_->loaded();
    cuda_check(cudaSetDevice(opts_.device), "cudaSetDevice");
    work_ = work;
    for (const auto& img : images) {
      CudaMemory m = CudaMemory::device(img.size(), "cudaMalloc (plan buffer)");
      if (!img.empty())
        cuda_check(cudaMemcpy(m.get(), img.data(), img.size(), cudaMemcpyHostToDevice), "cudaMemcpy (load)");
      buffers_.push_back(std::move(m));
    }
    for (std::int64_t s : work_.scratch_bytes)
      scratch_.push_back(CudaMemory::device(static_cast<std::size_t>(s), "cudaMalloc (scratch)"));
    // One GEMM work area for every virtual device (its contents do not
    // matter), sized for the largest GEMM (n ≤ 8192: at most 768 MiB in f32).
    std::int64_t need = 0;
    for (const auto& t : plan.tasks)
      if (runs_as_gemm(t)) need = std::max(need, Cublas::work_bytes(gemm_shape_for(t.flops).n, t.dtype));
    if (need > 0 && cublas_->available()) {
      gemm_work_ = CudaMemory::device(static_cast<std::size_t>(need), "cudaMalloc (GEMM work)");
      fill_gemm_operands(gemm_work_.get(), need);
    }
    gate_stream_ = new_stream();
    std::map<std::pair<std::size_t, int>, cudaStream_t> streams;
    task_stream_.clear();
    for (const auto& t : plan.tasks) {
      const auto key = std::pair{t.devices[0], t.stream};
      auto it = streams.find(key);
      if (it == streams.end()) {
        streams_.push_back(new_stream());
        it = streams.emplace(key, streams_.back().get()).first;
      }
      task_stream_.push_back(it->second);
    }
    // A cuBLAS workspace per stream that runs GEMMs.
    task_workspace_.assign(plan.tasks.size(), nullptr);
    std::map<cudaStream_t, void*> ws;
    for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
      if (gemm_work_.get() == nullptr || !runs_as_gemm(plan.tasks[i])) continue;
      void*& w = ws[task_stream_[i]];
      if (w == nullptr) {
        workspaces_.push_back(
            CudaMemory::device(static_cast<std::size_t>(Cublas::kWorkspaceBytes), "cudaMalloc (cuBLAS)"));
        w = workspaces_.back().get();
      }
      task_workspace_[i] = w;
    }
    load_staging();
    for (std::size_t i = 0; i < 2 * plan.tasks.size() + 1; ++i) events_.push_back(new_event());
    cuda_check(cudaDeviceSynchronize(), "loading the plan");
  }

  [[nodiscard]] std::vector<TaskSpan> run(const plan::Plan& plan, const Schedule& schedule) override {
    const std::size_t n = plan.tasks.size();
    MESHSIM_ASSERT(task_stream_.size() == n, "run() before load()");
    cuda_check(cudaSetDevice(opts_.device), "cudaSetDevice");
    // The gate holds every stream until all tasks are enqueued (or until
    // HostGate::kMaxHeld calls); t0 is recorded when it opens, so host-side
    // enqueueing is not timed. The first run after load() is not gated
    // (cuda_util.h says why).
    cudaEvent_t t0 = events_.back().get();
    {
      const HostGate::Hold hold = gate_->hold(gate_stream_.get());
      gate_->admit(1 + static_cast<std::int64_t>(streams_.size()));
      cuda_check(cudaEventRecord(t0, gate_stream_.get()), "cudaEventRecord");
      for (const CudaStream& s : streams_)
        cuda_check(cudaStreamWaitEvent(s.get(), t0, 0), "cudaStreamWaitEvent");
      for (std::size_t i : schedule.order) {
        cudaStream_t s = task_stream_[i];
        for (std::size_t p : schedule.preds[i])
          if (task_stream_[p] != s) {
            gate_->admit(1);
            cuda_check(cudaStreamWaitEvent(s, end_event(p), 0), "cudaStreamWaitEvent");
          }
        gate_->admit(1);
        cuda_check(cudaEventRecord(start_event(i), s), "cudaEventRecord");
        enqueue(plan, plan.tasks[i], work_.tasks[i], s, task_workspace_[i]);
        for (const Reduction& r : work_.tasks[i].reductions) enqueue_sum(r, s, task_staging_[i]);
        gate_->admit(1);
        cuda_check(cudaEventRecord(end_event(i), s), "cudaEventRecord");
      }
    }
    wait_all(plan, schedule);
    std::vector<TaskSpan> spans(n);
    for (std::size_t i = 0; i < n; ++i) {
      float a = 0;
      float b = 0;
      cuda_check(cudaEventElapsedTime(&a, t0, start_event(i)), "cudaEventElapsedTime");
      cuda_check(cudaEventElapsedTime(&b, t0, end_event(i)), "cudaEventElapsedTime");
      spans[i] = {ms_to_time(a), ms_to_time(b)};
    }
    return spans;
  }

  [[nodiscard]] std::vector<std::string> notes() const override { return gate_->notes(); }

  [[nodiscard]] std::vector<std::vector<std::byte>> read_back(const plan::Plan& plan) override {
    cuda_check(cudaSetDevice(opts_.device), "cudaSetDevice");
    std::vector<std::vector<std::byte>> out(plan.buffers.size());
    for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
      out[b].resize(static_cast<std::size_t>(plan.buffers[b].size.count()));
      if (!out[b].empty())
        cuda_check(cudaMemcpy(out[b].data(), buffers_[b].get(), out[b].size(), cudaMemcpyDeviceToHost),
                   "cudaMemcpy (read back)");
    }
    return out;
  }

 private:
  [[nodiscard]] cudaEvent_t start_event(std::size_t i) const { return events_[2 * i].get(); }
  [[nodiscard]] cudaEvent_t end_event(std::size_t i) const { return events_[2 * i + 1].get(); }

  // A staging area per stream that sums, as large as its largest
  // reduction needs: every source packed, then the packed sum.
  void load_staging() {
    task_staging_.assign(work_.tasks.size(), nullptr);
    std::map<cudaStream_t, std::int64_t> need;
    for (std::size_t i = 0; i < work_.tasks.size(); ++i)
      for (const Reduction& r : work_.tasks[i].reductions) {
        const auto parts = static_cast<std::int64_t>(r.sources.size()) + 1;
        need[task_stream_[i]] = std::max(need[task_stream_[i]], parts * r.sources.front().copy.bytes());
      }
    std::map<cudaStream_t, std::byte*> area;
    for (const auto& [s, bytes] : need) {
      staging_.push_back(CudaMemory::device(static_cast<std::size_t>(bytes), "cudaMalloc (sum staging)"));
      area[s] = staging_.back().get();
    }
    for (std::size_t i = 0; i < work_.tasks.size(); ++i)
      if (!work_.tasks[i].reductions.empty()) task_staging_[i] = area.at(task_stream_[i]);
  }

  // Sums a reduction's sources into its destination: each source packed
  // into the staging area, the sum kernel, the packed sum unpacked.
  void enqueue_sum(const Reduction& r, cudaStream_t s, std::byte* staging) {
    static_assert(
        static_cast<int>(plan::DType::u8) == kSumU8 && static_cast<int>(plan::DType::bf16) == kSumBF16,
        "meshsim_launch_sum's types follow plan::DType");
    const std::int64_t bytes = r.sources.front().copy.bytes();
    const auto count = static_cast<std::int64_t>(r.sources.size());
    for (std::int64_t j = 0; j < count; ++j) {
      const BufferCopy& c = r.sources[static_cast<std::size_t>(j)];
      enqueue_copy(staging + j * bytes, buffers_[c.src_buffer].get(), with_packed_destination(c.copy), s,
                   gate_.get(), max_pitch_);
    }
    gate_->admit(1);
    cuda_check(meshsim_launch_sum(staging, static_cast<int>(count), bytes / plan::dtype_size(r.dtype),
                                  static_cast<int>(r.dtype), staging + count * bytes, s),
               "sum kernel");
    enqueue_copy(buffers_[r.dst_buffer].get(), staging + count * bytes,
                 with_packed_source(r.sources.front().copy), s, gate_.get(), max_pitch_);
  }

  void enqueue(const plan::Plan& plan, const plan::Task& task, const TaskWork& w, cudaStream_t s,
               void* workspace) {
    if (w.compute) {
      if (runs_as_gemm(task) && gemm_work_.get() != nullptr) {  // gemm_work_: cuBLAS is there
        // Each device of the task runs its GEMMs; here they all share the one GPU.
        const GemmShape g = gemm_shape_for(task.flops);
        for (std::int64_t k = 0; k < g.count * static_cast<std::int64_t>(task.devices.size()); ++k) {
          gate_->admit(kCallsPerGemm);
          cublas_->gemm(g.n, task.dtype, gemm_work_.get(), s, workspace);
        }
        return;
      }
      const Time t = compute_time_of(opts_.compute_time, plan, task);
      if (t > Time{}) {
        gate_->admit(1);
        cuda_check(meshsim_launch_spin(static_cast<std::uint64_t>(t.count_ps() / 1000), s), "busy kernel");
      }
      return;
    }
    for (const BufferCopy& c : w.copies)
      enqueue_copy(buffers_[c.dst_buffer].get(), buffers_[c.src_buffer].get(), c.copy, s, gate_.get(),
                   max_pitch_);
    for (const ScratchCopy& c : w.scratch) {
      gate_->admit(1);
      cuda_check(cudaMemcpyAsync(scratch_[c.dst_device].get(), scratch_[c.src_device].get(),
                                 static_cast<std::size_t>(c.bytes), cudaMemcpyDeviceToDevice, s),
                 "cudaMemcpyAsync (scratch)");
    }
  }

  // Polls the end events; no progress for opts_.timeout → the first task
  // (in schedule order) still waiting is named.
  void wait_all(const plan::Plan& plan, const Schedule& schedule) {
    using Clock = std::chrono::steady_clock;
    std::vector<bool> done(plan.tasks.size(), false);
    std::size_t left = plan.tasks.size();
    auto last_progress = Clock::now();
    const auto limit = std::chrono::nanoseconds(opts_.timeout.count_ps() / 1000);
    while (left > 0) {
      bool progress = false;
      for (std::size_t i : schedule.order) {
        if (done[i]) continue;
        const cudaError_t e = cudaEventQuery(end_event(i));
        if (e == cudaSuccess) {
          done[i] = true;
          --left;
          progress = true;
        } else if (e != cudaErrorNotReady) {
          cuda_check(e, fmt::format("task \"{}\"", plan.tasks[i].id).c_str());
        }
      }
      if (progress) {
        last_progress = Clock::now();
      } else if (Clock::now() - last_progress > limit) {
        for (std::size_t i : schedule.order)
          if (!done[i])
            throw DeviceError(fmt::format("timed out after {}: task \"{}\" on {} has not finished",
                                          human_string(opts_.timeout), plan.tasks[i].id,
                                          plan.devices[plan.tasks[i].devices[0]]));
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  // Waits for the device, then lets the owners free everything.
  void release() {
    (void)cudaSetDevice(opts_.device);
    (void)cudaDeviceSynchronize();
    workspaces_.clear();
    staging_.clear();
    task_staging_.clear();
    gate_stream_.reset();
    gemm_work_.reset();
    buffers_.clear();
    scratch_.clear();
    streams_.clear();
    events_.clear();
    task_stream_.clear();
  }

  CudaBackendOptions opts_;
  std::string gpu_name_;
  std::int64_t max_pitch_ = std::int64_t{1} << 31;
  std::unique_ptr<Cublas> cublas_;
  std::unique_ptr<HostGate> gate_;
  CudaStream gate_stream_;
  PlanWork work_;
  std::vector<CudaMemory> buffers_;  // per plan buffer
  std::vector<CudaMemory> scratch_;  // per virtual device
  CudaMemory gemm_work_;             // empty: no GEMM tasks, or no cuBLAS
  std::vector<CudaStream> streams_;
  std::vector<cudaStream_t> task_stream_;  // per task, one of streams_
  std::vector<void*> task_workspace_;      // its stream's cuBLAS workspace, for GEMM tasks
  std::vector<CudaMemory> workspaces_;
  std::vector<std::byte*> task_staging_;  // its stream's sum staging, for tasks that reduce
  std::vector<CudaMemory> staging_;
  std::vector<CudaEvent> events_;  // start, end per task; the last is t0
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& opts) {
  // More hardware queues than the default 8, so that streams of different
  // virtual devices do not serialise on a shared queue (read when CUDA
  // starts; a user's own setting wins).
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  return std::make_unique<CudaBackend>(opts);
}

}  // namespace meshsim::runtime
