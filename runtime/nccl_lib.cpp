#include "runtime/nccl_lib.h"

#include <fmt/format.h>

#include "core/error.h"
#include "runtime/nccl_setup.h"

namespace meshsim::runtime {

Nccl::Nccl() {
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

void Nccl::check(ncclResult_t r, const char* what) const {
  if (r != ncclSuccess) throw DeviceError(fmt::format("{}: {}", what, error_string(r)));
}

void Nccl::issue(const NcclCall& c, std::size_t me, std::size_t nm, ncclComm_t comm, void* p,
                 cudaStream_t s) const {
  const auto bytes = static_cast<std::size_t>(c.bytes);
  auto* b = static_cast<char*>(p);
  switch (c.op) {
    case NcclOp::local_copy: return;
    case NcclOp::send: check(send(p, bytes, ncclInt8, c.peer, comm, s), "ncclSend"); return;
    case NcclOp::recv: check(recv(p, bytes, ncclInt8, c.peer, comm, s), "ncclRecv"); return;
    case NcclOp::broadcast: check(broadcast(p, p, bytes, ncclInt8, c.peer, comm, s), "ncclBroadcast"); return;
    case NcclOp::all_gather:  // in place: this rank's piece sits at its place in the output
      check(all_gather(b + me * (bytes / nm), b, bytes / nm, ncclInt8, comm, s), "ncclAllGather");
      return;
    case NcclOp::reduce_scatter: {
      const auto esz = static_cast<std::size_t>(plan::dtype_size(c.dtype));
      const std::size_t count = bytes / nm / esz;  // elements per rank
      check(reduce_scatter(b, b + me * count * esz, count, nccl_type(c.dtype), ncclSum, comm, s),
            "ncclReduceScatter");
      return;
    }
    case NcclOp::all_reduce: {
      const auto count = bytes / static_cast<std::size_t>(plan::dtype_size(c.dtype));
      check(all_reduce(b, b, count, nccl_type(c.dtype), ncclSum, comm, s), "ncclAllReduce");
      return;
    }
  }
}

void Nccl::destroy_all(const std::vector<ncclComm_t>& comms) const {
  if (finalize != nullptr) {
    (void)group_start();
    for (ncclComm_t c : comms)
      if (c != nullptr) (void)finalize(c);
    (void)group_end();
  }
  for (ncclComm_t c : comms)
    if (c != nullptr) (void)destroy(c);
}

}  // namespace meshsim::runtime
