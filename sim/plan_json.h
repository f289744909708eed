#pragma once
// Reading, validating and writing `meshsim.plan/1` (see sim/plan.h).
// Every mistake is a ConfigError naming the file and JSON path: unknown or
// duplicate ids, dependency cycles (the cycle is spelled out), empty or
// negative sizes, regions outside their tensor, regions outside their
// buffers, payloads that do not add up to the task's size, and — against a
// topology — devices that do not exist or are not GPUs.

#include <string>

#include "core/json.h"
#include "sim/plan.h"
#include "topology/topology.h"

namespace meshsim::sim {

inline constexpr const char* kPlanFormat = "meshsim.plan/1";

[[nodiscard]] Plan load_plan_file(const std::string& file);
[[nodiscard]] Plan plan_from_json(const Json& j, const std::string& file);
[[nodiscard]] Json plan_to_json(const Plan& p);

/// A dtype name ("f32", "bf16", ...) at `c`; ConfigError listing the names otherwise.
[[nodiscard]] DType dtype_from_json(const JsonCursor& c);

/// Checks that every device a plan names is a GPU of `t`; the error names
/// the task's JSON path (e.g. `tasks[3].dst`).
void check_plan_devices(const Plan& p, const topology::Topology& t, const std::string& file);

}  // namespace meshsim::sim
