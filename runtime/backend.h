#pragma once
// Executing a Plan for real: the Backend interface and the Schedule every
// backend honours.
//
// Schedule. A task may start once its predecessors have ended: its `deps`,
// and on every (device, stream) it involves, the task before it in plan
// order on that stream (as on a CUDA stream). `order` is one topological
// order (Kahn, smallest index first): a backend that issues work from one
// thread issues it in this order; the NCCL backend issues every rank's
// calls in it, so ranks agree on the order of operations.
//
// Backend. load() allocates each plan buffer on its plan device and writes
// its initial image (layout.h); run() executes every task once and returns
// when all have ended, with each task's measured [start, end) relative to
// the run's start; read_back() returns every buffer's bytes for
// verification. A run may be repeated (warm-up, timing): the plans move
// copies, so running them again leaves the same bytes.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/units.h"
#include "runtime/work.h"
#include "sim/plan.h"

namespace meshsim::runtime {

struct Schedule {
  std::vector<std::size_t> order;               // topological, ties by plan index
  std::vector<std::vector<std::size_t>> preds;  // deps ∪ stream predecessors, per task, sorted, unique
  std::vector<std::vector<std::size_t>> succs;  // the reverse edges
};

/// InternalError for a cycle (the plan loader rejects those first).
[[nodiscard]] Schedule make_schedule(const sim::Plan& plan);

struct TaskSpan {
  Time start;
  Time end;
};

class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  [[nodiscard]] virtual std::string name() const = 0;
  /// One line: what the plan devices are on this backend.
  [[nodiscard]] virtual std::string describe() const = 0;
  /// `schedule` and `work` are make_schedule(plan) and lower(plan), made once by the caller.
  virtual void load(const sim::Plan& plan, const Schedule& schedule, const PlanWork& work,
                    const std::vector<std::vector<std::byte>>& images) = 0;
  [[nodiscard]] virtual std::vector<TaskSpan> run(const sim::Plan& plan, const Schedule& schedule) = 0;
  [[nodiscard]] virtual std::vector<std::vector<std::byte>> read_back(const sim::Plan& plan) = 0;
  /// Caveats on the last run's timing (for example, host-side enqueueing
  /// that shows in it); empty when there are none.
  [[nodiscard]] virtual std::vector<std::string> notes() const { return {}; }
};

}  // namespace meshsim::runtime
