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
/// Regions of one task do not race with each other (the task's own
/// semantics order them), but two that write the same bytes must both sum
/// ("reduce"), or which one survives is not defined. Tile buffers (with a
/// declared box) compare boxes in a sweep; flat buffers compare byte
/// ranges in schedule order, each access against the last write and the
/// reads since: about n log n for n accesses.
void check_races(const Plan& plan, const Schedule& schedule, const std::string& file);

}  // namespace meshsim::plan
