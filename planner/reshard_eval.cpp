#include "planner/reshard_eval.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "planner/redistribute/evaluate.h"

namespace meshsim::planner {

NicTraffic nic_traffic(const topology::Topology& t, const sim::SimResult& r) {
  NicTraffic out;
  for (topology::DirLinkId l = 0; l < r.link_bytes.size(); ++l) {
    const auto& link = t.link(topology::Topology::link_of(l));
    const topology::NodeId from = t.from(l);
    if (link.kind != topology::LinkKind::network || t.node(from).kind != topology::NodeKind::nic) continue;
    out.network_bytes += r.link_bytes[l];
    if (r.link_bytes[l] > out.busiest_nic_bytes) {
      out.busiest_nic_bytes = r.link_bytes[l];
      out.busiest_nic = t.node(from).name;
    }
  }
  return out;
}

namespace {
// An outcome's simulation result and what its NICs sent.
void take_result(const topology::Topology& t, ReshardOutcome& o, sim::SimResult r) {
  o.result = std::move(r);
  NicTraffic n = nic_traffic(t, o.result);
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
      o.name = std::string(to_string(s));
      o.balance = std::string(to_string(b));
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
      o.name = std::string(rd::to_string(r.strategy));
      o.balance = std::string(1, '-');  // (g++ 12 warns falsely on = "-")
      o.plan = std::move(r.emission.plan);
      take_result(t, o, std::move(r.result));  // evaluate simulated it already
      out.push_back(std::move(o));
    }
  }
  if (with_auto) {
    AutoPlan a = plan_auto(t, p, tasks);
    ReshardOutcome o;
    o.name = "auto";
    o.balance = fmt::format("{}/{} +{} swaps", to_string(a.strategy), to_string(a.start), a.improvements);
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

}  // namespace meshsim::planner
