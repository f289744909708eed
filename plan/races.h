#pragma once
// Data races in a plan: two tasks that touch the same bytes of a buffer,
// one of them writing, must be ordered: the later waits for the earlier
// through its deps or the stream order the schedule adds. Otherwise what
// the reader sees (or which write survives) depends on timing, and a run
// verifies on one try and fails on the next.

#include <string>

#include "plan/plan.h"
#include "plan/schedule.h"

namespace meshsim::plan {

/// Throws ConfigError (path `tasks[i]`, the later task) naming both tasks,
/// the buffer and the bytes, for the first unordered conflict it finds.
/// Regions of one task never race with each other (the task's own
/// semantics order them). Tile buffers (with a declared box) compare
/// boxes; flat buffers compare byte ranges.
void check_races(const Plan& plan, const Schedule& schedule, const std::string& file);

}  // namespace meshsim::plan
