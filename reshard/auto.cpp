// `auto` resharding: simulator-scored choice and local search (reshard/reshard.h).

#include <set>

#include <fmt/format.h>

#include "reshard/reshard.h"
#include "sim/executor.h"

namespace meshsim::reshard {

AutoPlan plan_auto(const topology::Topology& t, const ReshardProblem& p, const std::vector<UnitTask>& tasks,
                   int max_evaluations) {
  AutoPlan best;
  best.makespan = Time::max();
  Jobs best_jobs;
  Assignment best_assignment;
  auto evaluate = [&](Strategy s, const Jobs& jobs, const Assignment& a) {
    ++best.evaluations;
    return sim::simulate(emit_plan(t, p, s, jobs, a, false), t).makespan;
  };
  for (Strategy s : kMovingStrategies) {
    const Jobs jobs = make_jobs(t, p, s, tasks);
    for (Balance b :
         {Balance::none, Balance::device, Balance::host_size, Balance::host_order, Balance::search}) {
      const Assignment a = assign_senders(t, tasks, jobs, b);
      const Time time = evaluate(s, jobs, a);
      if (time < best.makespan) {
        best.makespan = time;
        best.strategy = s;
        best.start = b;
        best_jobs = jobs;
        best_assignment = a;
      }
    }
  }
  // Local search: single-job sender moves, then adjacent swaps in order.
  bool improved = true;
  // Simulates a neighbour of the current best and keeps it if strictly faster.
  auto try_neighbour = [&](Assignment a) {
    const Time time = evaluate(best.strategy, best_jobs, a);
    if (time >= best.makespan) return;
    best.makespan = time;
    best_assignment = std::move(a);
    ++best.improvements;
    improved = true;
  };
  while (improved && best.evaluations < max_evaluations) {
    improved = false;
    for (std::size_t k = 0; k < best_assignment.order.size() && best.evaluations < max_evaluations; ++k) {
      const std::size_t j = best_assignment.order[k];
      for (topology::NodeId s : tasks[best_jobs.list[j].task].senders) {
        if (s == best_assignment.sender[j] || best.evaluations >= max_evaluations) continue;
        Assignment a = best_assignment;
        a.sender[j] = s;
        try_neighbour(std::move(a));
      }
    }
    for (std::size_t k = 0; k + 1 < best_assignment.order.size() && best.evaluations < max_evaluations; ++k) {
      Assignment a = best_assignment;
      std::swap(a.order[k], a.order[k + 1]);
      try_neighbour(std::move(a));
    }
  }
  best.plan = emit_plan(t, p, best.strategy, best_jobs, best_assignment);
  best.plan.name =
      fmt::format("reshard {} -> {} (auto: {} from {}, {} improvements)", p.src_spec.str(), p.dst_spec.str(),
                  to_string(best.strategy), to_string(best.start), best.improvements);
  return best;
}

}  // namespace meshsim::reshard
