#include "topology/cost.h"

#include <cmath>
#include <set>

#include <boost/range/iterator_range.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "hardware/gpus.h"
#include "hardware/hosts.h"
#include "hardware/network_parts.h"

namespace meshsim::topology {

std::optional<double> JobCost::usd(Time t) const {
  if (!usd_per_gpu_hour) return std::nullopt;
  return *usd_per_gpu_hour * gpus * t.seconds() / 3600.0;
}

namespace {

// Ports a link takes at a switch whose ports run at `port_rate`.
double ports_taken(const Link& l, Bandwidth port_rate) {
  return std::ceil(static_cast<double>(l.line_rate().bps()) / static_cast<double>(port_rate.bps()) - 1e-9);
}

// One host's rated power, and whether it is only its GPUs' and NICs'.
struct HostWatts {
  double watts = 0;
  bool parts_only = false;
};

HostWatts host_watts(const Topology& t, int host) {
  if (t.costs.host_watts) return {*t.costs.host_watts, false};
  if (const auto* p = hardware::find_host_preset(t.hosts()[static_cast<std::size_t>(host)].preset);
      p != nullptr && p->system_watts > 0)
    return {p->system_watts, false};
  HostWatts w{0, true};
  for (NodeId g : t.host_gpus(host))
    if (const auto* spec = hardware::find_gpu(t.node(g).model)) w.watts += spec->board_watts;
  for (NodeId n : t.host_nics(host))
    for (const auto& e : boost::make_iterator_range(boost::out_edges(n, t.graph()))) {
      const Link& l = t.link(Topology::link_of(boost::get(boost::edge_index, t.graph(), e)));
      if (l.kind != LinkKind::network) continue;
      if (const auto* nic = hardware::nic_of_rate(l.bandwidth)) w.watts += nic->watts;
      break;
    }
  return w;
}

}  // namespace

double fabric_watts(const Topology& t) {
  if (!t.costs.switch_watts) return 0;
  const double per_switch = *t.costs.switch_watts;
  double watts = 0;
  for (NodeId id = 0; id < t.node_count(); ++id)  // switches of no known model: whole
    if (const Node& n = t.node(id);
        n.kind == NodeKind::network_switch && hardware::find_switch(n.model) == nullptr)
      watts += per_switch;
  for (const Link& l : t.links()) {  // the others: per port taken
    if (l.kind != LinkKind::network) continue;
    for (NodeId end : {l.a, l.b}) {
      const Node& n = t.node(end);
      if (n.kind != NodeKind::network_switch) continue;
      if (const auto* sw = hardware::find_switch(n.model))
        watts += ports_taken(l, sw->port_rate) * per_switch / sw->ports;
    }
  }
  return watts;
}

JobCost job_cost(const Topology& t, int job_gpus) {
  const auto& gpus = t.gpus();
  if (job_gpus < 1 || static_cast<std::size_t>(job_gpus) > gpus.size())
    throw UsageError(fmt::format("a job of {} GPUs on {}, which has {}", job_gpus, t.name, gpus.size()));
  JobCost c;
  c.gpus = job_gpus;
  std::set<int> hosts;
  for (int i = 0; i < job_gpus; ++i) hosts.insert(t.node(gpus[static_cast<std::size_t>(i)]).host);
  c.hosts = static_cast<int>(hosts.size());

  // The price: the topology's, else the first host's preset's.
  const auto* preset = hardware::find_host_preset(t.hosts()[static_cast<std::size_t>(*hosts.begin())].preset);
  if (t.costs.gpu_hour_usd) {
    c.usd_per_gpu_hour = t.costs.gpu_hour_usd;
    c.price_source = "as given";
  } else if (preset != nullptr && preset->gpu_hour_usd > 0) {
    c.usd_per_gpu_hour = preset->gpu_hour_usd;
    c.price_source = std::string(preset->price_source);
  }

  bool parts_only = false;
  for (int h : hosts) {
    const HostWatts w = host_watts(t, h);
    c.host_watts += w.watts;
    parts_only = parts_only || w.parts_only;
  }
  const double fabric = fabric_watts(t);
  c.fabric_watts = fabric * c.hosts / std::max(1, t.host_count());
  const std::string host_part =
      t.costs.host_watts ? fmt::format("{} hosts at {:.3g} kW as given", c.hosts, *t.costs.host_watts / 1e3)
      : parts_only       ? fmt::format("{} hosts' GPUs and NICs only (no system figure)", c.hosts)
                         : fmt::format("{} hosts at their rated system power", c.hosts);
  c.power_basis = t.costs.switch_watts ? fmt::format("{}, and their share of the switches at {:.0f} W each",
                                                     host_part, *t.costs.switch_watts)
                                       : fmt::format("{}; switches not counted (--switch-watts)", host_part);
  return c;
}

StepCost step_cost(const JobCost& c, Time step, double tokens_per_step) {
  StepCost s;
  s.usd_per_step = c.usd(step);
  s.kwh_per_step = c.joules(step) / 3.6e6;
  if (tokens_per_step > 0) {
    const double per_million = 1e6 / tokens_per_step;
    if (s.usd_per_step) s.usd_per_million_tokens = *s.usd_per_step * per_million;
    s.kwh_per_million_tokens = s.kwh_per_step * per_million;
  }
  return s;
}

}  // namespace meshsim::topology
