#include "plan/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace meshsim::plan {

std::optional<double> relative_error(Time predicted, Time measured) {
  if (measured <= Time::zero()) return predicted <= Time::zero() ? std::optional(0.0) : std::nullopt;
  return (predicted.seconds() - measured.seconds()) / measured.seconds();
}

std::vector<std::size_t> TimelineComparison::largest_errors_first() const {
  std::vector<std::size_t> order(tasks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const auto size = [&](std::size_t i) {
    const auto& e = tasks[i].error;
    return e ? std::abs(*e) : std::numeric_limits<double>::infinity();
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return size(x) > size(y); });
  return order;
}

TimelineComparison compare_timelines(const Timeline& predicted, const Timeline& measured) {
  MESHSIM_ASSERT(predicted.tasks.size() == measured.tasks.size(), "timelines of the same plan");
  TimelineComparison c;
  c.makespan_error = relative_error(predicted.makespan, measured.makespan);
  double sum = 0;
  for (std::size_t i = 0; i < predicted.tasks.size(); ++i) {
    const TaskSpan& p = predicted.tasks[i];
    const TaskSpan& m = measured.tasks[i];
    TaskComparison t{p.end - p.start, m.end - m.start, std::nullopt};
    t.error = relative_error(t.predicted, t.measured);
    if (t.error) sum += std::abs(*t.error);
    c.tasks.push_back(t);
  }
  if (!c.tasks.empty()) c.mean_abs_task_error = sum / static_cast<double>(c.tasks.size());
  return c;
}

}  // namespace meshsim::plan
