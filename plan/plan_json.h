#pragma once
// Reading, validating and writing `meshsim.plan/1` (see plan/plan.h).
// Every mistake is a ConfigError naming the file and JSON path: unknown or
// duplicate ids, dependency cycles (the cycle is spelled out), empty or
// negative sizes, regions outside their tensor, regions outside their
// buffers, regions on devices the task does not reach (a send reads on
// its source and writes on its destination, a broadcast on its root and
// receivers, a collective on its members), payloads that do not add up to
// the task's size or, for a collective, write more than its size on one
// member. (Devices are checked against a topology by the simulator:
// sim/executor.h.)

#include <iosfwd>
#include <string>

#include "core/json.h"
#include "plan/plan.h"
#include "plan/schedule.h"

namespace meshsim::plan {

inline constexpr const char* kPlanFormat = "meshsim.plan/1";

/// A plan read from a file, with the schedule the loader made of it (the
/// executors take it rather than make it again).
struct LoadedPlan {
  Plan plan;
  Schedule schedule;
};

[[nodiscard]] LoadedPlan load_plan(const std::string& file);
[[nodiscard]] Plan load_plan_file(const std::string& file);
[[nodiscard]] Plan plan_from_json(const Json& j, const std::string& file);
/// plan_from_json, and the plan's schedule.
[[nodiscard]] LoadedPlan read_plan(const Json& j, const std::string& file);
[[nodiscard]] Json plan_to_json(const Plan& p);
/// dump_json(plan_to_json(p)) written to `out` a task at a time, so that a
/// large plan is never held whole as a JSON document.
void write_plan_json(const Plan& p, std::ostream& out);

}  // namespace meshsim::plan
