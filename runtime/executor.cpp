#include "runtime/executor.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_limit.h"
#include "core/unit_strings.h"
#include "runtime/layout.h"
#include "runtime/work.h"

namespace meshsim::runtime {

double Backend::host_bytes(const plan::Plan& plan, const PlanWork& /*work*/) const {
  return static_cast<double>(buffer_bytes(plan));
}

RunReport run_plan(const plan::Plan& plan, Backend& backend, const RunOptions& opts) {
  return run_plan(plan, plan::make_schedule(plan, plan::plan_origin(plan)), backend, opts);
}

RunReport run_plan(const plan::Plan& plan, const Schedule& schedule, Backend& backend,
                   const RunOptions& opts) {
  if (opts.iterations < 1) throw UsageError("iterations must be at least 1");
  if (opts.warmup < 0) throw UsageError("warm-up runs must not be negative");
  const PlanWork work = lower(plan);
  require_memory(backend.host_bytes(plan, work),
                 fmt::format("running {} on the {} backend ({} of buffers)",
                             plan.name.empty() ? "the plan" : fmt::format("plan \"{}\"", plan.name),
                             backend.name(), human_string(Bytes(buffer_bytes(plan)))),
                 "--scale N runs it with every payload N times smaller, its layout kept");
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
  rep.timeline = plan::make_timeline(schedule, std::move(runs[median]));
  rep.timing_only = !plan::carries_payload(plan);
  if (opts.verify && !rep.timing_only) {
    rep.verified = true;
    rep.check = verify_images(plan, backend.read_back(plan));
  }
  return rep;
}

}  // namespace meshsim::runtime
