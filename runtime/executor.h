#pragma once
// runtime::run_plan: executes a Plan on a Backend, verifies every
// destination byte, and measures the timeline.
//
//   1. initial images (layout.h) are loaded: sources hold their elements'
//      patterns, destinations poison;
//   2. the plan runs `warmup` times untimed, then `iterations` times timed;
//      the reported timeline is the iteration with the median makespan
//      (makespan = the last task's end; times start at the run's start);
//   3. every buffer is read back and verified (verify.h), unless the plan
//      carries no payload at all: such a run is timing-only, and says so.
// The measured timeline is a plan::Timeline, with the makespan and critical
// path defined once for simulated and measured runs (plan/schedule.h).

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/verify.h"

namespace meshsim::runtime {

struct RunOptions {
  int warmup = 0;
  int iterations = 1;
  bool verify = true;
};

struct RunReport {
  std::string backend;
  std::string backend_description;
  plan::Timeline timeline;      // the iteration with the median makespan
  std::vector<Time> makespans;  // every timed iteration, in order
  std::int64_t payload_bytes = 0;
  std::int64_t scratch_bytes = 0;
  std::vector<std::string> notes;  // the backend's caveats on the timed runs, each once
  bool timing_only = false;        // the plan carries no payload: nothing to verify
  bool verified = false;           // verification ran
  Verification check;
};

/// UsageError for iterations < 1 or warmup < 0.
[[nodiscard]] RunReport run_plan(const plan::Plan& plan, Backend& backend, const RunOptions& opts = {});
/// The same, with the plan's schedule already made (a loaded plan's).
[[nodiscard]] RunReport run_plan(const plan::Plan& plan, const Schedule& schedule, Backend& backend,
                                 const RunOptions& opts = {});

}  // namespace meshsim::runtime
