#pragma once
// The host backend, always built: every plan device is a region of host
// memory (one array per plan buffer, plus a scratch area per device for
// payload-less tasks), and tasks run on worker threads as soon as their
// predecessors (Schedule) have ended. A task's copies run on the worker
// that took it, one memcpy per contiguous run (layout.h), so a strided
// region costs one memcpy per row.
//
// Compute tasks cannot run a GPU kernel here: the worker waits for the
// task's `duration`, or for `compute_time(task)` when the caller supplies
// one (the CLI passes the simulator's roofline), else for nothing.
// Timing uses the steady clock; times are relative to the run's start.

#include <functional>
#include <memory>

#include "runtime/backend.h"
#include "runtime/verify.h"

namespace meshsim::runtime {

struct HostBackendOptions {
  int threads = 0;  // workers; 0: the hardware's threads (at least 2)
  ComputeTime compute_time;
  /// No task may keep the run waiting longer: a compute task that would
  /// sleep past it is refused before the run starts.
  Time timeout = Time::s(60);
};

[[nodiscard]] std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& opts = {});

/// Runs the plan once on the host backend and verifies it (the planners'
/// end-to-end check).
[[nodiscard]] Verification verify_on_host(const plan::Plan& plan);

}  // namespace meshsim::runtime
