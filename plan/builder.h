#pragma once
// Helpers for planners that build plans with payloads.
//
// Sum payloads: an all_reduce over n devices of E elements becomes a tensor
// of n parts (plan.h), one part buffer and one sum buffer per member, and
// n × n sum regions (each member's sum buffer adds every member's part).
//
// Stamping: a plan fragment (a resharding plan, say) repeated once per
// microbatch needs its own tensors and buffers each time; stamping copies
// the fragment's tensors and buffers under a prefix and renames the
// regions that refer to them.

#include <cstdint>
#include <string>

#include "plan/plan.h"

namespace meshsim::plan {

/// Gives `task` (an all_reduce over its devices) a sum payload of `elements`
/// elements of `dtype` named `tensor`, adding the tensor and its buffers to
/// `plan`. UsageError for more members than kMaxParts.
void add_sum_payload(Plan& plan, Task& task, const std::string& tensor, DType dtype, std::int64_t elements);

/// Adds `fragment`'s tensors and buffers to `plan` as "<prefix>/<name>".
void stamp_names(Plan& plan, const Plan& fragment, const std::string& prefix);
/// `r` with its tensor and buffers renamed as stamp_names renames them.
[[nodiscard]] Region stamped(Region r, const std::string& prefix);

}  // namespace meshsim::plan
