#pragma once
// The NCCL entry points meshsim uses, resolved at run time from
// libnccl.so.2 (never included without NCCL headers).

#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "runtime/dynlib.h"
#include "runtime/nccl_calls.h"

namespace meshsim::runtime {

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

  /// UsageError when libnccl cannot be loaded.
  Nccl();
  void check(ncclResult_t r, const char* what) const;
  /// Issues one program call (nccl_calls.h) on `comm`, where this rank is
  /// member `me` of `members`; `p` is its buffer (in place for collectives).
  void issue(const NcclCall& c, std::size_t me, std::size_t members, ncclComm_t comm, void* p,
             cudaStream_t s) const;
  /// Destroys communicators of which this thread may own several ranks:
  /// finalising is collective inside a node, so the finalize calls go in
  /// one group (else the first waits for ranks not yet called), then each
  /// is destroyed. Errors are ignored: this runs on the way out.
  void destroy_all(const std::vector<ncclComm_t>& comms) const;
};

}  // namespace meshsim::runtime
