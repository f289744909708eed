#include "reshard/evaluate.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "reshard/redistribute/evaluate.h"
#include "sim/nic_traffic.h"

namespace meshsim::reshard {

std::string Method::name() const {
  switch (kind) {
    case Kind::strategy: return std::string(to_string(strategy));
    case Kind::automatic: return "auto";
    case Kind::redistribution: return std::string(redistribute::to_string(redistribution));
  }
  return "?";
}

std::string Method::balance_name() const {
  switch (kind) {
    case Kind::strategy: return std::string(to_string(balance));
    case Kind::automatic:
      return fmt::format("{}/{} +{} swaps", to_string(strategy), to_string(balance), improvements);
    case Kind::redistribution: return "-";
  }
  return "?";
}

namespace {
// An outcome's simulation result and what its NICs sent.
void take_result(const topology::Topology& t, ReshardOutcome& o, sim::SimResult r) {
  o.result = std::move(r);
  sim::NicTraffic n = sim::nic_traffic(t, o.result);
  o.network_bytes = n.network_bytes;
  o.busiest_nic = std::move(n.busiest_nic);
  o.busiest_nic_bytes = n.busiest_nic_bytes;
}
void measure(const topology::Topology& t, ReshardOutcome& o, bool record_timeline) {
  sim::SimOptions opts;
  opts.record_link_timeline = record_timeline;
  take_result(t, o, sim::simulate(o.plan, t, opts));
}
}  // namespace

std::vector<ReshardOutcome> evaluate_reshard(const topology::Topology& t, const ReshardProblem& p,
                                             const std::vector<UnitTask>& tasks,
                                             const std::vector<Strategy>& strategies,
                                             const std::vector<Balance>& balances, bool with_auto,
                                             bool record_timeline) {
  std::vector<ReshardOutcome> out;
  for (Strategy s : strategies)
    for (Balance b : balances) {
      if (s == Strategy::signal && b != balances.front()) continue;
      ReshardOutcome o;
      o.method = Method{Method::Kind::strategy, s, b};
      o.moves_data = s != Strategy::signal;
      o.plan = build_plan(t, p, tasks, s, b);
      measure(t, o, record_timeline);
      out.push_back(std::move(o));
    }
  const bool overlap = std::any_of(p.src.devices.begin(), p.src.devices.end(), [&](topology::NodeId d) {
    return std::find(p.dst.devices.begin(), p.dst.devices.end(), d) != p.dst.devices.end();
  });
  if (overlap) {
    namespace rd = redistribute;
    const rd::Problem q = rd::problem_on(p.tensor, p.src, p.dst, p.src_spec, p.dst_spec);
    rd::StepTimer timer(t, q);
    for (rd::Outcome& r : rd::evaluate(t, q, {std::begin(rd::kAllStrategies), std::end(rd::kAllStrategies)},
                                       timer, std::nullopt, record_timeline)) {
      ReshardOutcome o;
      o.method.kind = Method::Kind::redistribution;
      o.method.redistribution = r.strategy;
      o.plan = std::move(r.emission.plan);
      take_result(t, o, std::move(r.result));  // evaluate simulated it already
      out.push_back(std::move(o));
    }
  }
  if (with_auto) {
    AutoPlan a = plan_auto(t, p, tasks);
    ReshardOutcome o;
    o.method = Method{Method::Kind::automatic, a.strategy, a.start};
    o.method.improvements = a.improvements;
    o.plan = std::move(a.plan);
    measure(t, o, record_timeline);
    out.push_back(std::move(o));
  }
  return out;
}

std::size_t fastest_moving(const std::vector<ReshardOutcome>& outcomes) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < outcomes.size(); ++i)
    if (outcomes[i].moves_data && (!best || outcomes[i].result.makespan < outcomes[*best].result.makespan))
      best = i;
  return best.value_or(0);
}

}  // namespace meshsim::reshard
