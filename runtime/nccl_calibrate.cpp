// `meshsim calibrate --backend nccl`: all-reduce, all-gather and broadcast
// bus bandwidth over every local GPU, as nccl-tests reports them.

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "runtime/calibrate.h"
#include "runtime/cuda_handles.h"
#include "runtime/nccl_lib.h"

namespace meshsim::runtime {

namespace {

// What one GPU needs for the sweep: a stream, a buffer, two events.
struct Rank {
  CudaStream stream;
  CudaMemory buffer;
  CudaEvent start;
  CudaEvent end;
};

// nccl-tests' bus factors: all-reduce 2(n-1)/n, all-gather (n-1)/n, broadcast 1.
double bus_factor(const std::string& op, double n) {
  return op == "all_reduce" ? 2 * (n - 1) / n : op == "all_gather" ? (n - 1) / n : 1.0;
}

// One grouped call of `op` over `bytes` on every rank; the slowest rank's time.
Time time_once(const Nccl& nccl, const std::string& op, std::size_t bytes,
               const std::vector<ncclComm_t>& comms, std::vector<Rank>& ranks) {
  for (std::size_t r = 0; r < comms.size(); ++r) {
    cuda_check(cudaSetDevice(static_cast<int>(r)), "cudaSetDevice");
    cuda_check(cudaEventRecord(ranks[r].start.get(), ranks[r].stream.get()), "cudaEventRecord");
  }
  nccl.check(nccl.group_start(), "ncclGroupStart");
  for (std::size_t r = 0; r < comms.size(); ++r) {
    auto* p = reinterpret_cast<char*>(ranks[r].buffer.get());
    cudaStream_t s = ranks[r].stream.get();
    if (op == "all_reduce")
      nccl.check(nccl.all_reduce(p, p, bytes / 4, ncclFloat, ncclSum, comms[r], s), "ncclAllReduce");
    else if (op == "all_gather")
      nccl.check(
          nccl.all_gather(p + r * (bytes / comms.size()), p, bytes / comms.size(), ncclInt8, comms[r], s),
          "ncclAllGather");
    else
      nccl.check(nccl.broadcast(p, p, bytes, ncclInt8, 0, comms[r], s), "ncclBroadcast");
  }
  nccl.check(nccl.group_end(), "ncclGroupEnd");
  float worst = 0;
  for (std::size_t r = 0; r < comms.size(); ++r) {
    cuda_check(cudaSetDevice(static_cast<int>(r)), "cudaSetDevice");
    cuda_check(cudaEventRecord(ranks[r].end.get(), ranks[r].stream.get()), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(ranks[r].end.get()), "cudaEventSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, ranks[r].start.get(), ranks[r].end.get()), "cudaEventElapsedTime");
    worst = std::max(worst, ms);
  }
  return ms_to_time(worst);
}

}  // namespace

plan::Calibration calibrate_nccl(const CalibrateOptions& o) {
  int gpus = 0;
  cuda_check(cudaGetDeviceCount(&gpus), "no usable GPU");
  if (gpus < 2)
    throw UsageError(fmt::format("NCCL calibration needs at least 2 GPUs; this machine has {}", gpus));
  Nccl nccl;
  const auto max = static_cast<std::size_t>(o.max_size.count());
  std::vector<Rank> ranks(static_cast<std::size_t>(gpus));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    cuda_check(cudaSetDevice(static_cast<int>(r)), "cudaSetDevice");
    ranks[r] = {new_stream(), CudaMemory::device(max, "cudaMalloc"), new_event(), new_event()};
    cuda_check(cudaMemset(ranks[r].buffer.get(), 0, max), "cudaMemset");
  }
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(gpus));
  std::vector<int> devs(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) devs[static_cast<std::size_t>(r)] = r;
  nccl.check(nccl.init_all(comms.data(), gpus, devs.data()), "ncclCommInitAll");
  // Communicators go before the buffers and streams they use (ranks' owners
  // run later). Leaving on an error, they are aborted: a collective left in
  // flight would keep an orderly destroy waiting forever.
  struct Comms {
    const Nccl& nccl;
    std::vector<ncclComm_t>& comms;
    const int unwinding = std::uncaught_exceptions();
    ~Comms() {
      if (std::uncaught_exceptions() > unwinding)
        for (ncclComm_t c : comms) (void)nccl.abort(c);
      else
        nccl.destroy_all(comms);
    }
  } owned{nccl, comms};
  plan::Calibration c;
  c.backend = "nccl";
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  c.machine = Json{{"gpu", prop.name}, {"gpu_model", gpu_model_of(prop.name)}, {"gpus", gpus}};
  for (const std::string op : {"all_reduce", "all_gather", "broadcast"}) {
    for (Bytes size :
         sweep_sizes(std::max(o.min_size, Bytes(static_cast<std::int64_t>(gpus) * 4)), o.max_size)) {
      const auto bytes = static_cast<std::size_t>(size.count()) / static_cast<std::size_t>(gpus * 4) *
                         static_cast<std::size_t>(gpus * 4);
      Time best = Time::max();
      for (int rep = 0; rep < o.repeats + 1; ++rep) {
        const Time t = time_once(nccl, op, bytes, comms, ranks);
        if (rep > 0) best = std::min(best, t);  // the first is a warm-up
      }
      const double busbw = static_cast<double>(bytes) / best.seconds() / 1e9 * bus_factor(op, gpus);
      c.collectives.push_back({op, gpus, Bytes(static_cast<std::int64_t>(bytes)), best, busbw});
    }
    if (o.progress)
      o.progress(fmt::format("{} over {} GPUs: busbw {:.1f} GB/s at {}", op, gpus,
                             c.collectives.back().busbw_GBps, human_string(c.collectives.back().size)));
  }
  return c;
}

}  // namespace meshsim::runtime
