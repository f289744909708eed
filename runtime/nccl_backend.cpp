#include "runtime/nccl_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <nccl.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "runtime/calibrate.h"
#include "runtime/cuda_util.h"
#include "runtime/distributed.h"
#include "runtime/kernels.h"
#include "runtime/nccl_calls.h"
#include "runtime/nccl_setup.h"
#include "runtime/work.h"

namespace meshsim::runtime {

namespace {

// NCCL groups enqueued behind a closed gate at most (see run()).
constexpr int kMaxGroupsHeld = 64;

// The NCCL entry points meshsim uses, resolved from libnccl.so.2.
struct Nccl {
  DynLib lib{{"libnccl.so.2", "libnccl.so"}};
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclCommInitAll) init_all = nullptr;
  decltype(&ncclGetUniqueId) unique_id = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommSplit) split = nullptr;
  decltype(&ncclCommFinalize) finalize = nullptr;  // optional (NCCL 2.14+)
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;

  Nccl() {
    if (!lib.loaded()) throw UsageError(fmt::format("NCCL cannot be loaded ({})", lib.error()));
    error_string = lib.function<decltype(error_string)>("ncclGetErrorString");
    init_all = lib.function<decltype(init_all)>("ncclCommInitAll");
    unique_id = lib.function<decltype(unique_id)>("ncclGetUniqueId");
    init_rank = lib.function<decltype(init_rank)>("ncclCommInitRank");
    split = lib.function<decltype(split)>("ncclCommSplit");
    finalize = reinterpret_cast<decltype(finalize)>(lib.symbol("ncclCommFinalize"));  // NOLINT
    destroy = lib.function<decltype(destroy)>("ncclCommDestroy");
    abort = lib.function<decltype(abort)>("ncclCommAbort");
    group_start = lib.function<decltype(group_start)>("ncclGroupStart");
    group_end = lib.function<decltype(group_end)>("ncclGroupEnd");
    send = lib.function<decltype(send)>("ncclSend");
    recv = lib.function<decltype(recv)>("ncclRecv");
    broadcast = lib.function<decltype(broadcast)>("ncclBroadcast");
    all_gather = lib.function<decltype(all_gather)>("ncclAllGather");
    reduce_scatter = lib.function<decltype(reduce_scatter)>("ncclReduceScatter");
    all_reduce = lib.function<decltype(all_reduce)>("ncclAllReduce");
  }
  void check(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) throw UsageError(fmt::format("{}: {}", what, error_string(r)));
  }
  /// Destroys communicators of which this thread may own several ranks:
  /// finalising is collective inside a node, so the finalize calls go in
  /// one group (else the first waits for ranks not yet called), then each
  /// is destroyed. Errors are ignored: this runs on the way out.
  void destroy_all(const std::vector<ncclComm_t>& comms) const {
    if (finalize != nullptr) {
      (void)group_start();
      for (ncclComm_t c : comms)
        if (c != nullptr) (void)finalize(c);
      (void)group_end();
    }
    for (ncclComm_t c : comms)
      if (c != nullptr) (void)destroy(c);
  }
};

// A region's bytes seen from one side, packed contiguously from offset 0.
StridedCopy pack_copy(const plan::Tensor& t, const plan::Region& r, const plan::Buffer& src) {
  plan::Region packed = r;
  packed.dst_offset = Bytes(0);
  return copy_of(t, packed, src, plan::Buffer{"staging", src.device, Bytes(0), {}, {}});
}
StridedCopy unpack_copy(const plan::Tensor& t, const plan::Region& r, const plan::Buffer& dst) {
  plan::Region packed = r;
  packed.src_offset = Bytes(0);
  return copy_of(t, packed, plan::Buffer{"staging", dst.device, Bytes(0), {}, {}}, dst);
}

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(NcclBackendOptions opts) : opts_(std::move(opts)), world_(distributed()) {
    cuda_check(cudaGetDeviceCount(&gpus_), "no usable GPU");
    if (world_ != nullptr) {
      me_ = world_->rank();
      local_dev_ = world_->local_rank() % gpus_;
    }
  }
  ~NcclBackend() override { release(false); }
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
    for (const auto& t : plan.tensors) tensors_.emplace(t.name, &t);
    for (std::size_t b = 0; b < plan.buffers.size(); ++b) buffer_index_.emplace(plan.buffers[b].name, b);
    // Memory: plan buffers on their rank's GPU, scratch, staging.
    for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
      const int r = rank_of(plan.buffers[b].device);
      void* p = nullptr;
      if (mine(r) && !images[b].empty()) {
        cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
        cuda_check(cudaMalloc(&p, images[b].size()), "cudaMalloc (plan buffer)");
        cuda_check(cudaMemcpy(p, images[b].data(), images[b].size(), cudaMemcpyHostToDevice),
                   "cudaMemcpy (load)");
      }
      buffers_.push_back(static_cast<std::byte*>(p));
    }
    scratch_.assign(static_cast<std::size_t>(n), nullptr);
    // Staging per (rank, plan stream), for the largest task on that stream:
    // tasks on one stream run one at a time, tasks on two streams may overlap.
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
    for (int r = 0; r < n; ++r) {
      if (!mine(r)) continue;
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      const auto sb = static_cast<std::size_t>(work_.scratch_bytes[static_cast<std::size_t>(r)]);
      if (sb > 0)
        cuda_check(cudaMalloc(reinterpret_cast<void**>(&scratch_[static_cast<std::size_t>(r)]), sb),
                   "cudaMalloc (scratch)");
    }
    for (const auto& [key, bytes] : staging) {
      if (!mine(key.first)) continue;
      cuda_check(cudaSetDevice(dev(key.first)), "cudaSetDevice");
      void* p = nullptr;
      cuda_check(cudaMalloc(&p, static_cast<std::size_t>(bytes)), "cudaMalloc (staging)");
      staging_[key] = static_cast<std::byte*>(p);
    }
    // Communicators: the world, then one split per group.
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
    // Streams per (rank, plan stream) and events per (task, rank).
    // A task involves its devices' ranks and every rank with a call of it
    // (one pass over the program, not one per task).
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
        if (!streams_.contains(key)) {
          cudaStream_t s = nullptr;
          cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
          streams_.emplace(key, s);
        }
        cudaEvent_t a = nullptr;
        cudaEvent_t b = nullptr;
        cuda_check(cudaEventCreate(&a), "cudaEventCreate");
        cuda_check(cudaEventCreate(&b), "cudaEventCreate");
        events_[{i, r}] = {a, b};
      }
    }
    t0_.assign(static_cast<std::size_t>(n), nullptr);
    gate_streams_.assign(static_cast<std::size_t>(n), nullptr);
    for (int r = 0; r < n; ++r) {
      if (!mine(r)) continue;
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      cuda_check(cudaEventCreate(&t0_[static_cast<std::size_t>(r)]), "cudaEventCreate");
      cuda_check(
          cudaStreamCreateWithFlags(&gate_streams_[static_cast<std::size_t>(r)], cudaStreamNonBlocking),
          "cudaStreamCreate");
      cuda_check(cudaDeviceSynchronize(), "loading the plan");
    }
    if (!gate_) {
      cuda_check(cudaSetDevice(dev(first_rank())), "cudaSetDevice");
      gate_ = std::make_unique<HostGate>();
    }
    gate_->loaded();
  }

  [[nodiscard]] std::vector<TaskSpan> run(const plan::Plan& plan, const Schedule& schedule) override {
    const auto n = static_cast<int>(prog_.devices.size());
    // Per rank: the calls of each task, in program order.
    std::vector<std::size_t> next(static_cast<std::size_t>(n), 0);
    // A gate on GPU 0 holds everything until all tasks are enqueued; when
    // it opens, rank 0 records its t0 and every other rank records its own
    // right after (so per-GPU clocks start together, host enqueueing untimed).
    // Under MPI each process gates its own GPU after a barrier.
    if (world_ != nullptr) world_->barrier();
    const int r0 = first_rank();
    const auto r0u = static_cast<std::size_t>(r0);
    cuda_check(cudaSetDevice(dev(r0)), "cudaSetDevice");
    // The first run after load() is not held (cuda_util.h says why).
    const HostGate::Hold hold = gate_->hold(gate_streams_[r0u]);
    gate_->admit(2 * static_cast<std::int64_t>(prog_.devices.size()) +
                 static_cast<std::int64_t>(streams_.size()));
    cuda_check(cudaEventRecord(t0_[r0u], gate_streams_[r0u]), "cudaEventRecord");
    for (int r = r0 + 1; r < n; ++r) {
      if (!mine(r)) continue;
      cuda_check(cudaSetDevice(dev(r)), "cudaSetDevice");
      cuda_check(cudaStreamWaitEvent(gate_streams_[static_cast<std::size_t>(r)], t0_[r0u], 0),
                 "cudaStreamWaitEvent");
      cuda_check(
          cudaEventRecord(t0_[static_cast<std::size_t>(r)], gate_streams_[static_cast<std::size_t>(r)]),
          "cudaEventRecord");
    }
    for (const auto& [key, s] : streams_) {
      cuda_check(cudaSetDevice(dev(key.first)), "cudaSetDevice");
      cuda_check(cudaStreamWaitEvent(s, t0_[static_cast<std::size_t>(key.first)], 0), "cudaStreamWaitEvent");
    }
    int groups_held = 0;
    for (std::size_t i : schedule.order) {
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
            cuda_check(cudaStreamWaitEvent(s, events_.at({p, q}).second, 0), "cudaStreamWaitEvent");
          }
        gate_->admit(2);  // the start event, and a busy kernel
        cuda_check(cudaEventRecord(events_.at({i, r}).first, s), "cudaEventRecord");
        if (task.kind == plan::TaskKind::compute) {
          const Time t = task.duration        ? *task.duration
                         : opts_.compute_time ? opts_.compute_time(task)
                                              : Time{};
          if (t > Time{})
            cuda_check(meshsim_launch_spin(static_cast<std::uint64_t>(t.count_ps() / 1000), s),
                       "busy kernel");
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
        cuda_check(cudaEventRecord(events_.at({i, r}).second, stream(r, task.stream)), "cudaEventRecord");
      }
    }
    // Under MPI every process opens its gate at once, so that the
    // processes' t0 mark the same moment.
    if (world_ != nullptr) world_->barrier();
    gate_->open();
    wait_all(plan, schedule);
    // Tasks this process did not run keep (max, -1 ps), so that combining
    // over the MPI job takes the other ranks' times.
    std::vector<TaskSpan> spans(plan.tasks.size(), TaskSpan{Time::max(), Time::ps(-1)});
    for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
      bool first = true;
      for (int r : task_ranks_[i]) {
        float a = 0;
        float b = 0;
        cuda_check(cudaEventElapsedTime(&a, t0_[static_cast<std::size_t>(r)], events_.at({i, r}).first),
                   "cudaEventElapsedTime");
        cuda_check(cudaEventElapsedTime(&b, t0_[static_cast<std::size_t>(r)], events_.at({i, r}).second),
                   "cudaEventElapsedTime");
        spans[i].start = first ? ms_to_time(a) : std::min(spans[i].start, ms_to_time(a));
        spans[i].end = first ? ms_to_time(b) : std::max(spans[i].end, ms_to_time(b));
        first = false;
      }
    }
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
        cuda_check(cudaMemcpy(out[b].data(), buffers_[b], out[b].size(), cudaMemcpyDeviceToHost),
                   "cudaMemcpy (read back)");
      }
      // Under MPI every process gets every buffer from its owner and verifies the whole plan.
      if (world_ != nullptr && !out[b].empty()) world_->broadcast(out[b].data(), out[b].size(), owner);
    }
    return out;
  }

 private:
  [[nodiscard]] int rank_of(const std::string& d) const {
    return static_cast<int>(std::lower_bound(prog_.devices.begin(), prog_.devices.end(), d) -
                            prog_.devices.begin());
  }
  // Whether this process runs rank r, and on which CUDA device.
  [[nodiscard]] bool mine(int r) const { return world_ == nullptr || r == me_; }
  [[nodiscard]] int dev(int r) const { return world_ != nullptr ? local_dev_ : r; }
  [[nodiscard]] int first_rank() const { return world_ != nullptr ? me_ : 0; }

  [[nodiscard]] cudaStream_t stream(int r, int plan_stream) const { return streams_.at({r, plan_stream}); }

  // The device pointer a call reads or writes; strided sources are packed
  // into staging now, strided destinations received there (unpack() later).
  void* pointer(const plan::Plan& plan, const plan::Task& task, int r, const NcclCall& c, cudaStream_t s,
                std::int64_t& staged) {
    if (c.region == kScratch) return scratch_[static_cast<std::size_t>(r)];
    const plan::Region& reg = task.payload[c.region];
    const plan::Tensor& t = *tensors_.at(reg.tensor);
    const std::size_t sb = buffer_index_.at(reg.src_buffer);
    const std::size_t db = buffer_index_.at(reg.dst_buffer);
    const bool sending = c.op == NcclOp::send || c.op == NcclOp::local_copy ||
                         (c.op == NcclOp::broadcast && rank_of(plan.buffers[sb].device) == r);
    if (c.op == NcclOp::local_copy) {
      enqueue_copy(buffers_[db], buffers_[sb], copy_of(t, reg, plan.buffers[sb], plan.buffers[db]), s,
                   gate_.get());
      return nullptr;
    }
    if (sending) {
      const StridedCopy pc = pack_copy(t, reg, plan.buffers[sb]);
      if (pc.outer.empty()) return buffers_[sb] + pc.src_offset;
      std::byte* at = staging_.at({r, task.stream}) + staged;
      staged += c.bytes;
      enqueue_copy(at, buffers_[sb], pc, s, gate_.get());
      return at;
    }
    const StridedCopy uc = unpack_copy(t, reg, plan.buffers[db]);
    if (uc.outer.empty()) return buffers_[db] + uc.dst_offset;
    std::byte* at = staging_.at({r, task.stream}) + staged;
    staged += c.bytes;
    return at;
  }

  void unpack(const plan::Plan& plan, const plan::Task& task, int r, const NcclCall& c, void* at,
              cudaStream_t s) {
    if (c.region == kScratch || c.op == NcclOp::send || c.op == NcclOp::local_copy) return;
    const plan::Region& reg = task.payload[c.region];
    const std::size_t db = buffer_index_.at(reg.dst_buffer);
    if (rank_of(plan.buffers[db].device) != r) return;  // the broadcast root
    const StridedCopy uc = unpack_copy(*tensors_.at(reg.tensor), reg, plan.buffers[db]);
    if (uc.outer.empty()) return;  // received in place
    StridedCopy from_staging = uc;
    from_staging.src_offset = 0;
    enqueue_copy(buffers_[db], static_cast<std::byte*>(at), from_staging, s, gate_.get());
  }

  void issue(int r, const NcclCall& c, void* p, cudaStream_t s) {
    if (c.op == NcclOp::local_copy) return;  // enqueued by pointer()
    const auto ru = static_cast<std::size_t>(r);
    ncclComm_t comm = comms_[static_cast<std::size_t>(c.comm)][ru];
    const auto bytes = static_cast<std::size_t>(c.bytes);
    const auto& members = prog_.comms[static_cast<std::size_t>(c.comm)].ranks;
    const auto me = static_cast<std::size_t>(std::find(members.begin(), members.end(), r) - members.begin());
    const std::size_t nm = members.size();
    auto* b = static_cast<char*>(p);
    switch (c.op) {
      case NcclOp::local_copy: return;
      case NcclOp::send: nccl_.check(nccl_.send(p, bytes, ncclInt8, c.peer, comm, s), "ncclSend"); return;
      case NcclOp::recv: nccl_.check(nccl_.recv(p, bytes, ncclInt8, c.peer, comm, s), "ncclRecv"); return;
      case NcclOp::broadcast:
        nccl_.check(nccl_.broadcast(p, p, bytes, ncclInt8, c.peer, comm, s), "ncclBroadcast");
        return;
      case NcclOp::all_gather:  // in place: this rank's piece sits at its place in the output
        nccl_.check(nccl_.all_gather(b + me * (bytes / nm), b, bytes / nm, ncclInt8, comm, s),
                    "ncclAllGather");
        return;
      case NcclOp::reduce_scatter: {
        const auto esz = static_cast<std::size_t>(plan::dtype_size(c.dtype));
        const std::size_t count = bytes / nm / esz;  // elements per rank
        nccl_.check(
            nccl_.reduce_scatter(b, b + me * count * esz, count, nccl_type(c.dtype), ncclSum, comm, s),
            "ncclReduceScatter");
        return;
      }
      case NcclOp::all_reduce: {
        const auto count = bytes / static_cast<std::size_t>(plan::dtype_size(c.dtype));
        nccl_.check(nccl_.all_reduce(b, b, count, nccl_type(c.dtype), ncclSum, comm, s), "ncclAllReduce");
        return;
      }
    }
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
        const cudaError_t e = cudaEventQuery(ev.second);
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
              throw UsageError(msg);
            }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void release(bool abort) {
    std::vector<ncclComm_t> all;
    for (auto& per_rank : comms_)
      for (ncclComm_t c : per_rank)
        if (c != nullptr) all.push_back(c);
    if (abort)
      for (ncclComm_t c : all) (void)nccl_.abort(c);
    else
      nccl_.destroy_all(all);
    comms_.clear();
    if (!abort) (void)cudaDeviceSynchronize();
    for (auto* p : buffers_) (void)cudaFree(p);
    for (auto* p : scratch_) (void)cudaFree(p);
    for (auto& [k, p] : staging_) (void)cudaFree(p);
    for (auto s : gate_streams_) (void)cudaStreamDestroy(s);
    gate_streams_.clear();
    for (auto& [k, s] : streams_) (void)cudaStreamDestroy(s);
    for (auto& [k, e] : events_) {
      (void)cudaEventDestroy(e.first);
      (void)cudaEventDestroy(e.second);
    }
    for (auto e : t0_) (void)cudaEventDestroy(e);
    buffers_.clear();
    scratch_.clear();
    staging_.clear();
    streams_.clear();
    events_.clear();
    t0_.clear();
    task_ranks_.clear();
    tensors_.clear();
    buffer_index_.clear();
  }

  NcclBackendOptions opts_;
  Distributed* world_ = nullptr;  // null: one process drives every GPU
  int me_ = 0;
  int local_dev_ = 0;
  Nccl nccl_;
  int gpus_ = 0;
  NcclProgram prog_;
  PlanWork work_;
  std::unordered_map<std::string, const plan::Tensor*> tensors_;
  std::unordered_map<std::string, std::size_t> buffer_index_;
  std::vector<std::byte*> buffers_;
  std::vector<std::byte*> scratch_;
  std::map<std::pair<int, int>, std::byte*> staging_;  // (rank, plan stream)
  std::unique_ptr<HostGate> gate_;
  std::vector<cudaStream_t> gate_streams_;
  std::vector<std::vector<ncclComm_t>> comms_;  // [comm][world rank]; null where not a member
  std::map<std::pair<int, int>, cudaStream_t> streams_;
  std::map<std::pair<std::size_t, int>, std::pair<cudaEvent_t, cudaEvent_t>> events_;
  std::vector<cudaEvent_t> t0_;
  std::vector<std::vector<int>> task_ranks_;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(const NcclBackendOptions& opts) {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);  // see make_cuda_backend
  return std::make_unique<NcclBackend>(opts);
}

plan::Calibration calibrate_nccl(const CalibrateOptions& o) {
  int gpus = 0;
  cuda_check(cudaGetDeviceCount(&gpus), "no usable GPU");
  if (gpus < 2)
    throw UsageError(fmt::format("NCCL calibration needs at least 2 GPUs; this machine has {}", gpus));
  Nccl nccl;
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(gpus));
  std::vector<int> devs(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) devs[static_cast<std::size_t>(r)] = r;
  nccl.check(nccl.init_all(comms.data(), gpus, devs.data()), "ncclCommInitAll");
  const auto max = static_cast<std::size_t>(o.max_size.count());
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(gpus));
  std::vector<void*> bufs(static_cast<std::size_t>(gpus));
  std::vector<cudaEvent_t> a(static_cast<std::size_t>(gpus));
  std::vector<cudaEvent_t> b(static_cast<std::size_t>(gpus));
  for (std::size_t r = 0; r < streams.size(); ++r) {
    cuda_check(cudaSetDevice(static_cast<int>(r)), "cudaSetDevice");
    cuda_check(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaMalloc(&bufs[r], max), "cudaMalloc");
    cuda_check(cudaMemset(bufs[r], 0, max), "cudaMemset");
    cuda_check(cudaEventCreate(&a[r]), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b[r]), "cudaEventCreate");
  }
  plan::Calibration c;
  c.backend = "nccl";
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  c.machine = Json{{"gpu", prop.name}, {"gpu_model", gpu_model_of(prop.name)}, {"gpus", gpus}};
  const double n = gpus;
  for (const char* op : {"all_reduce", "all_gather", "broadcast"}) {
    const double factor = std::string(op) == "all_reduce"   ? 2 * (n - 1) / n
                          : std::string(op) == "all_gather" ? (n - 1) / n
                                                            : 1.0;
    for (Bytes size :
         sweep_sizes(std::max(o.min_size, Bytes(static_cast<std::int64_t>(gpus) * 4)), o.max_size)) {
      const auto bytes = static_cast<std::size_t>(size.count()) / static_cast<std::size_t>(gpus * 4) *
                         static_cast<std::size_t>(gpus * 4);
      Time best = Time::max();
      for (int rep = 0; rep < o.repeats + 1; ++rep) {
        for (std::size_t r = 0; r < comms.size(); ++r) {
          cuda_check(cudaSetDevice(static_cast<int>(r)), "cudaSetDevice");
          cuda_check(cudaEventRecord(a[r], streams[r]), "cudaEventRecord");
        }
        nccl.check(nccl.group_start(), "ncclGroupStart");
        for (std::size_t r = 0; r < comms.size(); ++r) {
          auto* p = static_cast<char*>(bufs[r]);
          if (std::string(op) == "all_reduce")
            nccl.check(nccl.all_reduce(p, p, bytes / 4, ncclFloat, ncclSum, comms[r], streams[r]),
                       "ncclAllReduce");
          else if (std::string(op) == "all_gather")
            nccl.check(nccl.all_gather(p + r * (bytes / comms.size()), p, bytes / comms.size(), ncclInt8,
                                       comms[r], streams[r]),
                       "ncclAllGather");
          else
            nccl.check(nccl.broadcast(p, p, bytes, ncclInt8, 0, comms[r], streams[r]), "ncclBroadcast");
        }
        nccl.check(nccl.group_end(), "ncclGroupEnd");
        float worst = 0;
        for (std::size_t r = 0; r < comms.size(); ++r) {
          cuda_check(cudaSetDevice(static_cast<int>(r)), "cudaSetDevice");
          cuda_check(cudaEventRecord(b[r], streams[r]), "cudaEventRecord");
          cuda_check(cudaEventSynchronize(b[r]), "cudaEventSynchronize");
          float ms = 0;
          cuda_check(cudaEventElapsedTime(&ms, a[r], b[r]), "cudaEventElapsedTime");
          worst = std::max(worst, ms);
        }
        if (rep > 0) best = std::min(best, ms_to_time(worst));
      }
      const double busbw = static_cast<double>(bytes) / best.seconds() / 1e9 * factor;
      c.collectives.push_back({op, gpus, Bytes(static_cast<std::int64_t>(bytes)), best, busbw});
    }
    if (o.progress)
      o.progress(fmt::format("{} over {} GPUs: busbw {:.1f} GB/s at {}", op, gpus,
                             c.collectives.back().busbw_GBps, human_string(c.collectives.back().size)));
  }
  nccl.destroy_all(comms);
  for (std::size_t r = 0; r < comms.size(); ++r) {
    (void)cudaSetDevice(static_cast<int>(r));
    (void)cudaFree(bufs[r]);
    (void)cudaStreamDestroy(streams[r]);
    (void)cudaEventDestroy(a[r]);
    (void)cudaEventDestroy(b[r]);
  }
  return c;
}

}  // namespace meshsim::runtime
