#pragma once
// The NCCL backend: one GPU per plan device (rank r = plan device r, in the
// order of Plan::devices). Either a single process drives every local GPU (rank r
// on GPU r, communicators from ncclCommInitAll), or, under MPI
// (`mpirun -np N meshsim-mpi run ... --backend nccl`, runtime/distributed.h),
// process r runs rank r on GPU (local rank mod GPUs): rank 0 calls
// ncclGetUniqueId, MPI_Bcast, every process ncclCommInitRank, as nccl-tests
// does. Under MPI each process issues only its own rank's calls (the same
// global order on every rank), waits only for predecessors it ran itself
// (a dependency on another process's task is carried by the data NCCL
// moves, not enforced separately), and after the run every buffer is
// broadcast from its owner so that every process verifies the whole plan.
// NCCL is loaded at run time (libnccl.so.2), so the binaries start without it.
//
// Communicators: ncclCommInitAll over all ranks (point-to-point), then one
// ncclCommSplit per broadcast/collective group of the program (nccl_calls.h),
// created once per plan in load(). Execution follows the program: per task,
// each involved rank's stream waits for the task's predecessors (on every
// rank they ran on), records a start event, packs strided send regions into
// a staging area, and the task's calls of all ranks are issued in one
// ncclGroupStart/End; received strided regions are unpacked, end events
// recorded. Compute tasks run the busy kernel (duration, or compute_time).
// A watchdog polls the end events: if none completes for `timeout`, every
// communicator is aborted (ncclCommAbort) and the error names the task and
// rank that were waiting.
//
// NCCL refuses two ranks of one communicator on one GPU (docs/runtime.md):
// plans with more devices than GPUs run on the cuda backend instead.

#include <functional>
#include <memory>

#include "runtime/backend.h"

namespace meshsim::runtime {

struct NcclBackendOptions {
  Time timeout = Time::s(60);
  ComputeTime compute_time;
};

/// UsageError when this build has no CUDA, NCCL cannot be loaded, or the
/// machine has fewer GPUs than the plan has devices (checked in load()).
[[nodiscard]] std::unique_ptr<Backend> make_nccl_backend(const NcclBackendOptions& opts = {});

}  // namespace meshsim::runtime
