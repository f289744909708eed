#include "runtime/nccl_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nccl.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "runtime/cuda_handles.h"
#include "runtime/distributed.h"
#include "runtime/kernels.h"
#include "runtime/nccl_calls.h"
#include "runtime/nccl_lib.h"
#include "runtime/nccl_setup.h"
#include "runtime/work.h"

namespace meshsim::runtime {

namespace {

// NCCL groups enqueued behind a closed gate at most (see run()).
constexpr int kMaxGroupsHeld = 64;

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(NcclBackendOptions opts) : opts_(std::move(opts)), world_(distributed()) {
    cuda_check(cudaGetDeviceCount(&gpus_), "no usable GPU");
    if (world_ != nullptr) {
      me_ = world_->rank();
      local_dev_ = world_->local_rank() % gpus_;
    }
  }
  // Destroyed while an error unwinds (a failed run or load), the
  // communicators are aborted: a collective left in flight would keep an
  // orderly destroy, or the device synchronisation, waiting forever.
  ~NcclBackend() override { release(std::uncaught_exceptions() > unwinding_); }
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  [[nodiscard]] std::string name() const override { return "nccl"; }
  [[nodiscard]] std::string describe() const override {
    return fmt::format("{} ranks (one GPU per plan device), {} communicators, {} ({})", prog_.devices.size(),
                       comms_.size(),
                       world_ != nullptr ? fmt::format("{} MPI processes", world_->size())
                                         : fmt::format("single process over {} GPUs", gpus_),
                       nccl_.lib.name());
  }

  void load(const plan::Plan& plan, const Schedule& schedule, const PlanWork& work,
            const std::vector<std::vector<std::byte>>& images) override {
    release(false);
    prog_ = nccl_program(plan, schedule);
    const auto n = static_cast<int>(prog_.devices.size());
    if (world_ != nullptr && n != world_->size())
      throw UsageError(
          fmt::format("the plan has {} devices but the MPI job {} processes: run one process per "
                      "plan device (mpirun -np {})",
                      n, world_->size(), n));
    if (world_ == nullptr && n > gpus_)
      throw UsageError(
          fmt::format("the plan has {} devices and this machine {} GPU{}: the nccl backend runs one "
                      "plan device per GPU (use --backend cuda for virtual devices)",
                      n, gpus_, gpus_ == 1 ? "" : "s"));
    work_ = work;
    load_memory(plan, images);
    create_comms();
    create_streams(plan);
    if (!gate_) {
      cuda_check(cudaSetDevice(dev(first_rank())), "cudaSetDevice");
      gate_ = std::make_unique<HostGate>();
    }
    gate_->loaded();
  }

  [[nodiscard]] std::vector<TaskSpan> run(const plan::Plan& plan, const Schedule& schedule) override {
    // Per rank: the calls of each task, in program order.
    std::vector<std::size_t> next(prog_.devices.size(), 0);
    // A gate on GPU 0 holds everything until all tasks are enqueued; when
    // it opens, rank 0 records its t0 and every other rank records its own
    // right after (so per-GPU clocks start together, host enqueueing untimed).
    // Under MPI each process gates its own GPU after a barrier.
    if (world_ != nullptr) world_->barrier();
    const auto r0u = static_cast<std::size_t>(first_rank());
    cuda_check(cudaSetDevice(dev(first_rank())), "cudaSetDevice");
    // The first run after load() is not held (cuda_util.h says why).
    const HostGate::Hold hold = gate_->hold(gate_streams_[r0u].get());
    gate_->admit(2 * static_cast<std::int64_t>(prog_.devices.size()) +
                 static_cast<std::int64_t>(streams_.size()));
    start_clocks();
    int groups_held = 0;
    for (std::size_t i : schedule.order) enqueue_task(plan, schedule, i, next, groups_held);
    // Under MPI every process opens its gate at once, so that the
    // processes' t0 mark the same moment.
    if (world_ != nullptr) world_->barrier();
    gate_->open();
    wait_all(plan, schedule);
    std::vector<TaskSpan> spans = measured_spans(plan);
    if (world_ != nullptr) world_->combine_spans(spans);
    return spans;
  }

  [[nodiscard]] std::vector<std::string> notes() const override { return gate_->notes(); }

  [[nodiscard]] std::vector<std::vector<std::byte>> read_back(const plan::Plan& plan) override {
    std::vector<std::vector<std::byte>> out(plan.buffers.size());
    for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
      out[b].resize(static_cast<std::size_t>(plan.buffers[b].size.count()));
      const int owner = rank_of(plan.buffers[b].device);
      if (mine(owner) && !out[b].empty()) {
        cuda_check(cudaSetDevice(dev(owner)), "cudaSetDevice");
        cuda_check(cudaMemcpy(out[b].data(), buffers_[b].get(), out[b].size(), cudaMemcpyDeviceToHost),
                   "cudaMemcpy (read back)");
      }
      // Under MPI every process gets every buffer from its owner and verifies the whole plan.
      if (world_ != nullptr && !out[b].empty()) world_->broadcast(out[b].data(), out[b].size(), owner);
    }
    return out;
  }

 private:
  // Each rank's t0 after rank r0's, and every stream after its rank's t0.
  void start_clocks() {
    const int r0 = first_rank();
    const auto r0u = static_cast<std::size_t>(r0);
    const auto n = static_cast<int>(prog_.devices.size());
    cuda_check(cudaEventRecord(t0_[r0u].get(), gate_streams_[r0u].get()), "cudaEventRecord");
    for (int r = r0 + 1; r < n; ++r) {
      if (!mine(r)) continue;
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      cuda_check(cudaStreamWaitEvent(gate_streams_[static_cast<std::size_t>(r)].get(), t0_[r0u].get(), 0),
                 "cudaStreamWaitEvent");
      cuda_check(cudaEventRecord(t0_[static_cast<std::size_t>(r)].get(),
                                 gate_streams_[static_cast<std::size_t>(r)].get()),
                 "cudaEventRecord");
    }
    for (const auto& [key, s] : streams_) {
      cuda_check(cudaSetDevice(dev(key.first)), "cudaSetDevice");
      cuda_check(cudaStreamWaitEvent(s.get(), t0_[static_cast<std::size_t>(key.first)].get(), 0),
                 "cudaStreamWaitEvent");
    }
  }

  // Task i on every rank of this process that takes part: waits on its
  // predecessors, start events, compute, the NCCL group, unpacking, end events.
  void enqueue_task(const plan::Plan& plan, const Schedule& schedule, std::size_t i,
                    std::vector<std::size_t>& next, int& groups_held) {
    const plan::Task& task = plan.tasks[i];
    // Waits, start events, packing.
    std::map<int, std::vector<const NcclCall*>> calls;
    for (int r : task_ranks_[i]) {
      auto& list = prog_.calls[static_cast<std::size_t>(r)];
      auto& k = next[static_cast<std::size_t>(r)];
      while (k < list.size() && list[k].task == i) calls[r].push_back(&list[k++]);
    }
    for (int r : task_ranks_[i]) {
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      cudaStream_t s = stream(r, task.stream);
      for (std::size_t p : schedule.preds[i])
        for (int q : task_ranks_[p]) {
          gate_->admit(1);
          cuda_check(cudaStreamWaitEvent(s, events_.at({p, q}).second.get(), 0), "cudaStreamWaitEvent");
        }
      gate_->admit(2);  // the start event, and a busy kernel
      cuda_check(cudaEventRecord(events_.at({i, r}).first.get(), s), "cudaEventRecord");
      if (task.kind == plan::TaskKind::compute) {
        const Time t = compute_time_of(opts_.compute_time, plan, task);
        if (t > Time{})
          cuda_check(meshsim_launch_spin(static_cast<std::uint64_t>(t.count_ps() / 1000), s), "busy kernel");
      }
    }
    // Pointers per call (packing strided sources into staging first).
    std::map<const NcclCall*, void*> where;
    for (auto& [r, list] : calls) {
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      cudaStream_t s = stream(r, task.stream);
      std::int64_t staged = 0;
      for (const NcclCall* c : list) where[c] = pointer(plan, task, r, *c, s, staged);
    }
    // A group queues a few operations per call on each stream (an event
    // record and wait on NCCL's own stream, the kernel). Launches whose
    // work does not fit the kernel arguments go through a per-communicator
    // FIFO that NCCL waits on when full, so few groups are held.
    for (auto& [r, list] : calls) gate_->admit(4 * static_cast<std::int64_t>(list.size()));
    if (++groups_held > kMaxGroupsHeld) gate_->open_early();
    nccl_.check(nccl_.group_start(), "ncclGroupStart");
    for (auto& [r, list] : calls) {
      cudaStream_t s = stream(r, task.stream);
      for (const NcclCall* c : list) issue(r, *c, where.at(c), s);
    }
    nccl_.check(nccl_.group_end(), "ncclGroupEnd");
    for (auto& [r, list] : calls) {
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      cudaStream_t s = stream(r, task.stream);
      for (const NcclCall* c : list) unpack(plan, task, r, *c, where.at(c), s);
    }
    for (int r : task_ranks_[i]) {
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      gate_->admit(1);
      cuda_check(cudaEventRecord(events_.at({i, r}).second.get(), stream(r, task.stream)), "cudaEventRecord");
    }
  }

  // Tasks this process did not run keep (max, -1 ps), so that combining
  // over the MPI job takes the other ranks' times.
  std::vector<TaskSpan> measured_spans(const plan::Plan& plan) const {
    std::vector<TaskSpan> spans(plan.tasks.size(), TaskSpan{Time::max(), Time::ps(-1)});
    for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
      bool first = true;
      for (int r : task_ranks_[i]) {
        float a = 0;
        float b = 0;
        cuda_check(
            cudaEventElapsedTime(&a, t0_[static_cast<std::size_t>(r)].get(), events_.at({i, r}).first.get()),
            "cudaEventElapsedTime");
        cuda_check(
            cudaEventElapsedTime(&b, t0_[static_cast<std::size_t>(r)].get(), events_.at({i, r}).second.get()),
            "cudaEventElapsedTime");
        spans[i].start = first ? ms_to_time(a) : std::min(spans[i].start, ms_to_time(a));
        spans[i].end = first ? ms_to_time(b) : std::max(spans[i].end, ms_to_time(b));
        first = false;
      }
    }
    return spans;
  }

  // Plan buffers on their rank's GPU (with their initial images), scratch,
  // and staging per (rank, plan stream) for the largest task on that
  // stream: tasks on one stream run one at a time, on two they may overlap.
  void load_memory(const plan::Plan& plan, const std::vector<std::vector<std::byte>>& images) {
    const auto n = static_cast<int>(prog_.devices.size());
    for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
      const int r = rank_of(plan.buffers[b].device);
      CudaMemory m;
      if (mine(r) && !images[b].empty()) {
        cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
        m = CudaMemory::device(images[b].size(), "cudaMalloc (plan buffer)");
        cuda_check(cudaMemcpy(m.get(), images[b].data(), images[b].size(), cudaMemcpyHostToDevice),
                   "cudaMemcpy (load)");
      }
      buffers_.push_back(std::move(m));
    }
    std::map<std::pair<int, int>, std::int64_t> staging;
    for (int r = 0; r < n; ++r) {
      std::map<std::size_t, std::int64_t> per_task;
      for (const auto& c : prog_.calls[static_cast<std::size_t>(r)])
        if (c.region != kScratch) per_task[c.task] += c.bytes;
      for (const auto& [task, bytes] : per_task) {
        auto& need = staging[{r, plan.tasks[task].stream}];
        need = std::max(need, bytes);
      }
    }
    scratch_.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      if (!mine(r)) continue;
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      scratch_[static_cast<std::size_t>(r)] = CudaMemory::device(
          static_cast<std::size_t>(work_.scratch_bytes[static_cast<std::size_t>(r)]), "cudaMalloc (scratch)");
    }
    for (const auto& [key, bytes] : staging) {
      if (!mine(key.first)) continue;
      cuda_check(cudaSetDevice(dev(key.first)), "cudaSetDevice");
      staging_[key] = CudaMemory::device(static_cast<std::size_t>(bytes), "cudaMalloc (staging)");
    }
  }

  // Communicators: the world, then one split per group.
  void create_comms() {
    const auto n = static_cast<int>(prog_.devices.size());
    comms_.assign(prog_.comms.size(), std::vector<ncclComm_t>(static_cast<std::size_t>(n), nullptr));
    if (world_ != nullptr) {
      // nccl-tests' bootstrap: rank 0 makes the id, everyone gets it, each
      // process joins with its own rank on its own GPU.
      ncclUniqueId id{};
      if (me_ == 0) nccl_.check(nccl_.unique_id(&id), "ncclGetUniqueId");
      world_->broadcast(&id, sizeof id, 0);
      cuda_check(cudaSetDevice(local_dev_), "cudaSetDevice");
      nccl_.check(nccl_.init_rank(&comms_[0][static_cast<std::size_t>(me_)], n, id, me_), "ncclCommInitRank");
    } else {
      std::vector<int> devs(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) devs[static_cast<std::size_t>(r)] = r;
      nccl_.check(nccl_.init_all(comms_[0].data(), n, devs.data()), "ncclCommInitAll");
    }
    for (std::size_t c = 1; c < prog_.comms.size(); ++c) {
      const auto& members = prog_.comms[c].ranks;
      const ForcedChoices forced(prog_.comms[c]);  // NCCL reads them while it creates the communicator
      nccl_.check(nccl_.group_start(), "ncclGroupStart");
      for (int r = 0; r < n; ++r) {
        if (!mine(r)) continue;
        const auto it = std::find(members.begin(), members.end(), r);
        const int color = it == members.end() ? NCCL_SPLIT_NOCOLOR : static_cast<int>(c);
        const int key = static_cast<int>(it - members.begin());
        nccl_.check(nccl_.split(comms_[0][static_cast<std::size_t>(r)], color, key,
                                &comms_[c][static_cast<std::size_t>(r)], nullptr),
                    "ncclCommSplit");
      }
      nccl_.check(nccl_.group_end(), "ncclGroupEnd (split)");
    }
  }

  // Streams per (rank, plan stream) and events per (task, rank). A task
  // involves its devices' ranks and every rank with a call of it (one pass
  // over the program, not one per task). Then each rank's clock event and
  // gate stream.
  void create_streams(const plan::Plan& plan) {
    const auto n = static_cast<int>(prog_.devices.size());
    std::vector<std::vector<int>> involved(plan.tasks.size());
    for (int r = 0; r < n; ++r)
      for (const auto& c : prog_.calls[static_cast<std::size_t>(r)]) involved[c.task].push_back(r);
    for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
      std::vector<int>& ranks = involved[i];
      for (const auto& d : plan.tasks[i].devices) ranks.push_back(rank_of(d));
      std::sort(ranks.begin(), ranks.end());
      ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
      ranks.erase(std::remove_if(ranks.begin(), ranks.end(), [&](int r) { return !mine(r); }), ranks.end());
      task_ranks_.push_back(ranks);  // the ranks of this process that take part
      for (int r : ranks) {
        cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
        const auto key = std::pair{r, plan.tasks[i].stream};
        if (!streams_.contains(key)) streams_.emplace(key, new_stream());
        events_.emplace(std::pair{i, r}, std::pair{new_event(), new_event()});
      }
    }
    t0_.resize(static_cast<std::size_t>(n));
    gate_streams_.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      if (!mine(r)) continue;
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      t0_[static_cast<std::size_t>(r)] = new_event();
      gate_streams_[static_cast<std::size_t>(r)] = new_stream();
      cuda_check(cudaDeviceSynchronize(), "loading the plan");
    }
  }

  // Ranks are the plan's device indices.
  [[nodiscard]] static int rank_of(std::size_t d) { return static_cast<int>(d); }
  // Whether this process runs rank r, and on which CUDA device.
  [[nodiscard]] bool mine(int r) const { return world_ == nullptr || r == me_; }
  [[nodiscard]] int dev(int r) const { return world_ != nullptr ? local_dev_ : r; }
  [[nodiscard]] int first_rank() const { return world_ != nullptr ? me_ : 0; }

  [[nodiscard]] cudaStream_t stream(int r, int plan_stream) const {
    return streams_.at({r, plan_stream}).get();
  }

  // The device pointer a call reads or writes; strided sources are packed
  // into staging now, strided destinations received there (unpack() later).
  void* pointer(const plan::Plan& plan, const plan::Task& task, int r, const NcclCall& c, cudaStream_t s,
                std::int64_t& staged) {
    if (c.region == kScratch) return scratch_[static_cast<std::size_t>(r)].get();
    const plan::Region& reg = task.payload[c.region];
    const plan::Tensor& t = plan.tensors[reg.tensor];
    const std::size_t sb = reg.src_buffer;
    const std::size_t db = reg.dst_buffer;
    const bool sending = c.op == NcclOp::send || c.op == NcclOp::local_copy ||
                         (c.op == NcclOp::broadcast && rank_of(plan.buffers[sb].device) == r);
    if (c.op == NcclOp::local_copy) {
      enqueue_copy(buffers_[db].get(), buffers_[sb].get(),
                   copy_of(t, reg, plan.buffers[sb], plan.buffers[db]), s, gate_.get());
      return nullptr;
    }
    if (sending) {
      const StridedCopy pc = pack_copy(t, reg, plan.buffers[sb]);
      if (pc.outer.empty()) return buffers_[sb].get() + pc.src_offset;
      std::byte* at = staging_.at({r, task.stream}).get() + staged;
      staged += c.bytes;
      enqueue_copy(at, buffers_[sb].get(), pc, s, gate_.get());
      return at;
    }
    const StridedCopy uc = unpack_copy(t, reg, plan.buffers[db]);
    std::byte* at = buffers_[db].get() + uc.dst_offset;
    if (!uc.outer.empty()) {
      at = staging_.at({r, task.stream}).get() + staged;
      staged += c.bytes;
    }
    // A sum payload is reduced in place where the sum lands: this rank's
    // part is packed there first (nccl_calls.h).
    if (c.op == NcclOp::all_reduce)
      enqueue_copy(at, buffers_[sb].get(), pack_copy(t, reg, plan.buffers[sb]), s, gate_.get());
    return at;
  }

  void unpack(const plan::Plan& plan, const plan::Task& task, int r, const NcclCall& c, void* at,
              cudaStream_t s) {
    if (c.region == kScratch || c.op == NcclOp::send || c.op == NcclOp::local_copy) return;
    const plan::Region& reg = task.payload[c.region];
    const std::size_t db = reg.dst_buffer;
    if (rank_of(plan.buffers[db].device) != r) return;  // the broadcast root
    const StridedCopy uc = unpack_copy(plan.tensors[reg.tensor], reg, plan.buffers[db]);
    if (uc.outer.empty()) return;  // received in place
    StridedCopy from_staging = uc;
    from_staging.src_offset = 0;
    enqueue_copy(buffers_[db].get(), static_cast<std::byte*>(at), from_staging, s, gate_.get());
  }

  void issue(int r, const NcclCall& c, void* p, cudaStream_t s) {
    if (c.op == NcclOp::local_copy) return;  // enqueued by pointer()
    const auto& members = prog_.comms[static_cast<std::size_t>(c.comm)].ranks;
    const auto me = static_cast<std::size_t>(std::find(members.begin(), members.end(), r) - members.begin());
    nccl_.issue(c, me, members.size(), comms_[static_cast<std::size_t>(c.comm)][static_cast<std::size_t>(r)],
                p, s);
  }

  void wait_all(const plan::Plan& plan, const Schedule& schedule) {
    using Clock = std::chrono::steady_clock;
    std::map<std::pair<std::size_t, int>, bool> done;
    std::size_t left = events_.size();
    auto last = Clock::now();
    const auto limit = std::chrono::nanoseconds(opts_.timeout.count_ps() / 1000);
    while (left > 0) {
      bool progress = false;
      for (const auto& [key, ev] : events_) {
        if (done[key]) continue;
        const cudaError_t e = cudaEventQuery(ev.second.get());
        if (e == cudaSuccess) {
          done[key] = true;
          --left;
          progress = true;
        } else if (e != cudaErrorNotReady) {
          cuda_check(e, fmt::format("task \"{}\"", plan.tasks[key.first].id).c_str());
        }
      }
      if (progress) {
        last = Clock::now();
        continue;
      }
      if (Clock::now() - last > limit) {
        for (std::size_t i : schedule.order)
          for (int r : task_ranks_[i])
            if (!done[{i, r}]) {
              const std::string msg = fmt::format(
                  "timed out after {}: task \"{}\" on rank {} ({}) has not finished; communicators aborted",
                  human_string(opts_.timeout), plan.tasks[i].id, r,
                  prog_.devices[static_cast<std::size_t>(r)]);
              release(true);
              throw DeviceError(msg);
            }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // Communicators first (destroyed, or aborted after a failure), then the
  // memory, streams and events they used, which their owners free.
  // The destructor calls it, so it may not throw: when the list an orderly
  // destroy needs cannot be made, the communicators are aborted instead.
  void release(bool abort) noexcept {
    std::vector<ncclComm_t> all;
    if (!abort) {
      try {
        for (auto& per_rank : comms_)
          for (ncclComm_t c : per_rank)
            if (c != nullptr) all.push_back(c);
      } catch (...) {
        abort = true;
      }
    }
    if (abort) {
      for (auto& per_rank : comms_)
        for (ncclComm_t c : per_rank)
          if (c != nullptr) (void)nccl_.abort(c);
    } else {
      nccl_.destroy_all(all);
    }
    comms_.clear();
    if (!abort) (void)cudaDeviceSynchronize();
    events_.clear();
    t0_.clear();
    streams_.clear();
    gate_streams_.clear();
    buffers_.clear();
    scratch_.clear();
    staging_.clear();
    task_ranks_.clear();
  }

  NcclBackendOptions opts_;
  const int unwinding_ = std::uncaught_exceptions();  // at construction (a backend made while unwinding)
  Distributed* world_ = nullptr;                      // null: one process drives every GPU
  int me_ = 0;
  int local_dev_ = 0;
  Nccl nccl_;
  int gpus_ = 0;
  NcclProgram prog_;
  PlanWork work_;
  std::vector<CudaMemory> buffers_;                    // per plan buffer; empty where not ours
  std::vector<CudaMemory> scratch_;                    // per rank
  std::map<std::pair<int, int>, CudaMemory> staging_;  // (rank, plan stream)
  std::unique_ptr<HostGate> gate_;
  std::vector<CudaStream> gate_streams_;
  std::vector<std::vector<ncclComm_t>> comms_;         // [comm][world rank]; null where not a member
  std::map<std::pair<int, int>, CudaStream> streams_;  // (rank, plan stream)
  std::map<std::pair<std::size_t, int>, std::pair<CudaEvent, CudaEvent>> events_;  // (task, rank): start, end
  std::vector<CudaEvent> t0_;                                                      // per rank
  std::vector<std::vector<int>> task_ranks_;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(const NcclBackendOptions& opts) {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);  // see make_cuda_backend
  return std::make_unique<NcclBackend>(opts);
}

}  // namespace meshsim::runtime
