#pragma once
// Comparing two timelines of one plan: a prediction (the simulator's) and a
// measurement (a runtime backend's), as `meshsim validate` reports them.
//
// The relative error of a predicted time p against a measured time m is
//     (p − m) / m,
// zero when both are zero and undefined (none) when only m is. A task's
// error compares its durations (end − start); the makespan error compares
// the makespans. The mean absolute task error averages |error| over every
// task, a task without an error counting as zero.

#include <cstddef>
#include <optional>
#include <vector>

#include "core/units.h"
#include "plan/schedule.h"

namespace meshsim::plan {

[[nodiscard]] std::optional<double> relative_error(Time predicted, Time measured);

struct TaskComparison {
  Time predicted;  // duration
  Time measured;
  std::optional<double> error;
};

struct TimelineComparison {
  std::optional<double> makespan_error;
  double mean_abs_task_error = 0;
  std::vector<TaskComparison> tasks;  // indexed like Plan::tasks

  /// Task indices, largest |error| first; tasks without an error first of
  /// all, ties in plan order.
  [[nodiscard]] std::vector<std::size_t> largest_errors_first() const;
};

/// `predicted` against `measured` (timelines of the same plan).
[[nodiscard]] TimelineComparison compare_timelines(const Timeline& predicted, const Timeline& measured);

}  // namespace meshsim::plan
