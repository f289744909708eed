#pragma once
// Helpers for planners that build plans with payloads.
//
// Sum payloads: an all_reduce over n devices of E elements becomes a tensor
// of n parts (plan.h), one part buffer and one sum buffer per member, and
// n × n sum regions (each member's sum buffer adds every member's part).
//
// Stamping: a plan fragment (a resharding plan, say) repeated once per
// microbatch needs its own tensors and buffers each time; stamping copies
// the fragment's tensors and buffers under a prefix, and moves the indices
// of the fragment's tasks and regions into the plan's tables.

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace meshsim::plan {

/// Gives `task` (an all_reduce over its devices, indices into plan.devices)
/// a sum payload of `elements` elements of `dtype` named `tensor`, adding
/// the tensor and its buffers to `plan`. UsageError for more members than kMaxParts.
void add_sum_payload(Plan& plan, Task& task, const std::string& tensor, DType dtype, std::int64_t elements);

/// Gives `task` (a reduce_scatter or an all_gather over its n devices) the
/// payload of `elements` elements of `dtype` named `tensor`, cut in n
/// shards of ceil(elements / n) (the tensor padded to n shards), shard k
/// the k-th member's: reduce_scatter, a tensor of n parts, each member's
/// part buffer whole and its output buffer shard k, the sum of every
/// part's shard k (n × n sum regions); all_gather, each member's input
/// buffer shard k and its output buffer whole, every member's shard copied
/// into every member's output, its own included (n × n regions). UsageError for a
/// reduce_scatter of more members than kMaxParts.
void add_sharded_payload(Plan& plan, Task& task, const std::string& tensor, DType dtype,
                         std::int64_t elements);

/// Gives `task` (an all_to_all over its n devices, each sending `elements`
/// elements of `dtype`, its own share included) the payload of a tensor of
/// n rows (senders) by n blocks of ceil(elements / n) (receivers): member
/// k's send buffer holds row k, member j's receive buffer column block j,
/// and block (k, j) goes from k to j (n × n regions).
void add_all_to_all_payload(Plan& plan, Task& task, const std::string& tensor, DType dtype,
                            std::int64_t elements);

/// Where a fragment's tables land in a plan.
struct Stamp {
  std::vector<std::size_t> devices;  // per fragment device, its index in the plan
  std::size_t tensors = 0;           // the plan index of the fragment's tensor 0
  std::size_t buffers = 0;           // the plan index of the fragment's buffer 0
};

/// Adds `fragment`'s tensors and buffers to `plan` as "<prefix>/<name>",
/// on the devices `s` maps them to; returns `s` with their places.
[[nodiscard]] Stamp stamp_names(Plan& plan, const Plan& fragment, const std::string& prefix, Stamp s);
/// Moves `t` (a copy of a task of the fragment) into the plan, in place:
/// its devices, and its payload's tensors and buffers. Fragments carry no
/// kernel sets.
void stamp_task(Task& t, const Stamp& s);
/// `r` (a region of the fragment) with its tensor and buffers moved into the plan.
[[nodiscard]] Region stamped(Region r, const Stamp& s);

}  // namespace meshsim::plan
