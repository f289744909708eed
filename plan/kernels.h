#pragma once
// The kernels of a compute task, when its planner knows them: GEMMs (a
// batch of m × n × k products each) and memory-bound kernels (the bytes
// each reads and writes), in one dtype. A plan keeps them once, as named
// kernel sets that compute tasks refer to ("kernels": name); the simulator
// times such a task kernel by kernel on the device's model
// (sim/compute_model.h: GEMMs in tiles and waves, each kernel with its
// launch) instead of as one roofline kernel of the task's flops and bytes.
// The task's flops and bytes default to the set's totals:
//   flops = Σ 2·m·n·k·batch over the GEMMs
//   bytes = Σ memory_bytes (the GEMMs' operand traffic is not counted)
// The runtime runs the task's flops and bytes as before.
//
// In a plan file:
//   "kernel_sets": [{"name": "B/s3", "dtype": "bf16",
//                    "gemms": [[m, n, k, batch], ...],
//                    "memory_bytes": ["40MiB", ...]}]

#include <vector>

#include "core/json.h"
#include "plan/plan.h"

namespace meshsim::plan {

/// The plan file's "kernel_sets" (ConfigError naming the JSON path: names
/// unique, every dimension and byte count positive and finite).
[[nodiscard]] std::vector<KernelSet> kernel_sets_from_json(const JsonCursor& c);
[[nodiscard]] Json kernel_sets_to_json(const std::vector<KernelSet>& sets);

}  // namespace meshsim::plan
