#include "runtime/executor.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "runtime/layout.h"
#include "runtime/work.h"

namespace meshsim::runtime {

RunReport run_plan(const sim::Plan& plan, Backend& backend, const RunOptions& opts) {
  if (opts.iterations < 1) throw UsageError("iterations must be at least 1");
  if (opts.warmup < 0) throw UsageError("warm-up runs must not be negative");
  const Schedule schedule = make_schedule(plan);
  const PlanWork work = lower(plan);
  RunReport rep;
  rep.backend = backend.name();
  rep.payload_bytes = work.payload_bytes;
  rep.scratch_bytes = work.scratch_moved;
  backend.load(plan, schedule, work, initial_images(plan));
  rep.backend_description = backend.describe();
  for (int w = 0; w < opts.warmup; ++w) (void)backend.run(plan, schedule);
  std::vector<std::vector<TaskSpan>> runs;
  for (int it = 0; it < opts.iterations; ++it) {
    runs.push_back(backend.run(plan, schedule));
    for (std::string& n : backend.notes())
      if (std::find(rep.notes.begin(), rep.notes.end(), n) == rep.notes.end())
        rep.notes.push_back(std::move(n));
    Time end;
    for (const TaskSpan& s : runs.back()) end = std::max(end, s.end);
    rep.makespans.push_back(end);
  }
  std::vector<std::size_t> idx(runs.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return rep.makespans[a] != rep.makespans[b] ? rep.makespans[a] < rep.makespans[b] : a < b;
  });
  const std::size_t median = idx[idx.size() / 2];
  rep.tasks = std::move(runs[median]);
  rep.makespan = rep.makespans[median];
  if (opts.verify) {
    rep.verified = true;
    rep.check = verify_images(plan, backend.read_back(plan));
  }
  return rep;
}

sim::SimResult as_sim_result(const sim::Plan& plan, const RunReport& report) {
  MESHSIM_ASSERT(report.tasks.size() == plan.tasks.size(), "one span per task");
  const Schedule s = make_schedule(plan);
  sim::SimResult r;
  r.makespan = report.makespan;
  r.tasks.resize(plan.tasks.size());
  std::size_t last = sim::kNoTask;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    auto& tm = r.tasks[i];
    tm.start = report.tasks[i].start;
    tm.end = report.tasks[i].end;
    for (std::size_t p : s.preds[i])
      if (tm.released_by == sim::kNoTask || report.tasks[p].end > report.tasks[tm.released_by].end)
        tm.released_by = p;
    if (last == sim::kNoTask || tm.end > r.tasks[last].end) last = i;
  }
  for (std::size_t i = last; i != sim::kNoTask; i = r.tasks[i].released_by) r.critical_path.push_back(i);
  std::reverse(r.critical_path.begin(), r.critical_path.end());
  return r;
}

}  // namespace meshsim::runtime
