#pragma once
// The order a Plan's tasks run in: the one definition that the loader
// checks, the simulator follows and every runtime backend issues work in.
//
// A task may start once each of its predecessors has ended. Its
// predecessors are its `deps` and, on every (device, stream) it involves,
// the task before it in plan order on that stream (tasks on one stream run
// one at a time, in plan order, as on a CUDA stream). Both kinds of edge
// together must form a DAG: a task that depends on a later task of its own
// stream waits for itself. make_schedule rejects such plans with a
// ConfigError that spells the cycle out, naming the stream of every
// stream edge on it.
//
// A timeline is what a run made of the schedule: one [start, end) per task.
// Its makespan is the latest end. Its critical path runs back from the task
// that ends last through, at each task, the predecessor that ended last
// (the one whose end let the task start); ties go to the later task in
// plan order, both for the last task and for each predecessor.

#include <cstddef>
#include <string>
#include <vector>

#include "core/flat_lists.h"
#include "core/units.h"
#include "plan/plan.h"

namespace meshsim::plan {

/// A list of task indices per task.
using Adjacency = FlatLists<std::size_t>;

struct Schedule {
  std::vector<std::size_t> order;  // topological; among ready tasks, the smallest index first
  Adjacency preds;                 // deps ∪ stream predecessors, per task, sorted, unique
  Adjacency succs;                 // the reverse edges, per task, ascending
};

/// The schedule of `plan`. ConfigError (file, the JSON path of the first
/// task on the cycle) when deps and stream order form a cycle; as
/// check_indices, MESHSIM_ASSERT that every device and dependency index of
/// a task is in range.
[[nodiscard]] Schedule make_schedule(const Plan& plan, const std::string& file);

/// Where `plan` came from, for error messages: its name, else "<plan>".
[[nodiscard]] std::string plan_origin(const Plan& plan);

struct TaskSpan {
  Time start;
  Time end;
};

struct Timeline {
  std::vector<TaskSpan> tasks;  // indexed like Plan::tasks
  Time makespan;
  std::vector<std::size_t> critical_path;  // task indices, first to last
};

/// Makespan and critical path (see above) of `spans` under `schedule`.
[[nodiscard]] Timeline make_timeline(const Schedule& schedule, std::vector<TaskSpan> spans);

}  // namespace meshsim::plan
