#pragma once
// Executing a Plan for real: the Backend interface and the Schedule every
// backend honours.
//
// Schedule (plan/schedule.h). A task may start once its predecessors have
// ended. A backend that issues work from one thread issues it in the
// schedule's `order`; the NCCL backend issues every rank's calls in it, so
// ranks agree on the order of operations.
//
// Backend. load() allocates each plan buffer on its plan device and writes
// its initial image (layout.h); run() executes every task once and returns
// when all have ended, with each task's measured [start, end) relative to
// the run's start; read_back() returns every buffer's bytes for
// verification. A run may be repeated (warm-up, timing): the plans move
// copies, so running them again leaves the same bytes.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/units.h"
#include "plan/plan.h"
#include "plan/schedule.h"
#include "runtime/work.h"

namespace meshsim::runtime {

/// What a compute task without a `duration` stands in for, given its plan
/// (the CLI passes the simulator's roofline of the task's GPU,
/// sim::roofline_stand_in); empty: no time.
using ComputeTime = std::function<Time(const plan::Plan&, const plan::Task&)>;

/// The time a backend spends on compute task `t` of `p`: its duration, else
/// the stand-in's time, else zero.
[[nodiscard]] inline Time compute_time_of(const ComputeTime& stand_in, const plan::Plan& p,
                                          const plan::Task& t) {
  if (t.duration) return *t.duration;
  return stand_in ? stand_in(p, t) : Time{};
}

using plan::Schedule;
using plan::TaskSpan;

class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  [[nodiscard]] virtual std::string name() const = 0;
  /// One line: what the plan devices are on this backend.
  [[nodiscard]] virtual std::string describe() const = 0;
  /// `schedule` and `work` are plan::make_schedule(plan) and lower(plan), made once by the caller.
  virtual void load(const plan::Plan& plan, const Schedule& schedule, const PlanWork& work,
                    const std::vector<std::vector<std::byte>>& images) = 0;
  [[nodiscard]] virtual std::vector<TaskSpan> run(const plan::Plan& plan, const Schedule& schedule) = 0;
  [[nodiscard]] virtual std::vector<std::vector<std::byte>> read_back(const plan::Plan& plan) = 0;
  /// Host memory a run on this backend holds at its peak, in bytes: the
  /// caller's images of the plan's buffers (or their read-back copy) and
  /// whatever the backend itself keeps in host memory.
  [[nodiscard]] virtual double host_bytes(const plan::Plan& plan, const PlanWork& work) const;
  /// Caveats on the last run's timing (for example, host-side enqueueing
  /// that shows in it); empty when there are none.
  [[nodiscard]] virtual std::vector<std::string> notes() const { return {}; }
};

}  // namespace meshsim::runtime
