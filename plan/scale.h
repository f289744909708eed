#pragma once
// A plan's payload made smaller, its layout kept: so that a plan built for
// a large model (gigabytes of activations and gradients per transfer) runs
// and verifies on a machine with less memory, every byte still checked.
//
// Each tensor shrinks N times along its longest dimension (the first of
// equal ones): its extent, every box bound along it (of buffers and
// regions) and every region's offset in a buffer without a box are divided
// by N; buffers and the sizes of transfers (sends, broadcasts,
// collectives) shrink by N too, rounded up. Devices, tasks, dependencies,
// streams and compute are unchanged. The scaled plan is read back through
// the loader, so it meets every rule a plan file does.

#include <string>

#include "plan/plan.h"
#include "plan/plan_json.h"

namespace meshsim::plan {

/// `p` with its payload `n` (>= 1) times smaller, and its schedule.
/// UsageError naming the tensor, buffer or task whose extent, bound or
/// offset is not a multiple of n; `file` names the plan in messages.
[[nodiscard]] LoadedPlan scaled_plan(const Plan& p, int n, const std::string& file);

}  // namespace meshsim::plan
