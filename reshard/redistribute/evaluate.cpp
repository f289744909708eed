#include "reshard/redistribute/evaluate.h"

#include <fmt/format.h>

#include "core/error.h"
#include "sim/nic_traffic.h"

namespace meshsim::reshard::redistribute {

std::vector<Outcome> evaluate(const topology::Topology& t, const Problem& p,
                              const std::vector<Strategy>& strategies, StepTimer& timer,
                              std::optional<Bytes> memory_limit, bool record_timeline, bool xla_budget) {
  std::vector<Outcome> out;
  // XLA reshards within one mesh; synth and rink stay within its bytes into
  // the fabric when some sequence does.
  std::optional<std::vector<Step>> xla;
  std::optional<double> budget;
  if (p.one_mesh()) {
    xla = xla_style(p);
    if (xla_budget) budget = timer.network_bytes(p.src, *xla);
  }
  for (Strategy s : strategies) {
    if (s == Strategy::xla && !xla) continue;
    Outcome o;
    o.strategy = s;
    if (s == Strategy::xla) {
      o.steps = *xla;
    } else {
      const bool exchange = s == Strategy::synth;
      try {
        try {
          o.steps = synthesize(p, timer, memory_limit, budget, exchange);
        } catch (const UsageError&) {
          if (!budget) throw;
          o.steps = synthesize(p, timer, memory_limit, std::nullopt, exchange);
        }
      } catch (const UsageError&) {
        // Rink's steps alone find nothing within the bound on some shapes:
        // no rink row then (synth, with the exchange, always finds one).
        if (s == Strategy::rink && !memory_limit) continue;
        throw;
      }
    }
    for (const auto& c : timer.costs(p.src, o.steps)) o.step_times.push_back(c.time);
    o.emission = emit(t, p, o.steps);
    o.emission.plan.name = fmt::format("redistribute {} -> {} ({})", p.src.str(), p.dst.str(), to_string(s));
    sim::SimOptions opts;
    opts.record_link_timeline = record_timeline;
    o.result = sim::simulate(o.emission.plan, t, opts);
    o.network_bytes = sim::nic_traffic(t, o.result).network_bytes;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace meshsim::reshard::redistribute
