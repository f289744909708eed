#include "planner/redistribute/evaluate.h"

#include <fmt/format.h>

namespace meshsim::planner::redistribute {

std::vector<Outcome> evaluate(const topology::Topology& t, const Problem& p,
                              const std::vector<Strategy>& strategies, StepTimer& timer,
                              std::optional<Bytes> memory_limit, bool record_timeline) {
  std::vector<Outcome> out;
  for (Strategy s : strategies) {
    Outcome o;
    o.strategy = s;
    o.steps = s == Strategy::synth ? synthesize(p, timer, memory_limit) : xla_style(p);
    ShardingSpec at = p.src;
    for (const Step& step : o.steps) {
      o.step_times.push_back(timer.time(at, step));
      at = step.after;
    }
    o.emission = emit(t, p, o.steps);
    o.emission.plan.name = fmt::format("redistribute {} -> {} ({})", p.src.str(), p.dst.str(), to_string(s));
    sim::SimOptions opts;
    opts.record_link_timeline = record_timeline;
    o.result = sim::simulate(o.emission.plan, t, opts);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace meshsim::planner::redistribute
