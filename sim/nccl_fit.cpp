#include "sim/nccl_fit.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "plan/collective.h"
#include "sim/executor.h"
#include "sim/ring_order.h"

namespace meshsim::sim {

namespace {

constexpr double kMinEfficiency = 0.02;
constexpr double kMaxLatencyS = 100e-6;

// Sets every link of `kind` to `efficiency` and `latency`.
void set_kind(topology::Topology& topo, topology::LinkKind kind, double efficiency, Time latency) {
  for (topology::LinkId id = 0; id < topo.link_count(); ++id)
    if (topo.link(id).kind == kind) topo.set_link_efficiency_latency(id, efficiency, latency);
}

// The first link of `kind`'s figures (the preset's, before a fit).
std::pair<double, Time> figures_of(const topology::Topology& topo, topology::LinkKind kind) {
  for (topology::LinkId id = 0; id < topo.link_count(); ++id)
    if (topo.link(id).kind == kind) return {topo.link(id).efficiency, topo.link(id).latency};
  return {1.0, Time::zero()};
}

// The x in [lo, hi] minimising f, to within `tol` of the interval, by golden-section search.
template <typename F>
double golden_min(F f, double lo, double hi, double tol) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = f(c), fd = f(d);
  while (b - a > tol * (hi - lo)) {
    if (fc <= fd) {
      b = d, d = c, fd = fc;
      c = b - g * (b - a), fc = f(c);
    } else {
      a = c, c = d, fc = fd;
      d = a + g * (b - a), fd = f(d);
    }
  }
  return fc <= fd ? c : d;
}

struct Row {
  std::size_t run = 0;
  std::size_t row = 0;
};

// One row's time on `topo`, the op run as NCCL chooses.
Time row_time(const std::string& op, const std::vector<std::string>& ring, Bytes size,
              const topology::Topology& topo) {
  NcclTestSpec spec;
  spec.op = op;
  return simulate(nccl_test_plan(spec, ring, size), topo).makespan;
}

}  // namespace

plan::Plan nccl_test_plan(const NcclTestSpec& spec, const std::vector<std::string>& ring, Bytes size) {
  plan::Plan p;
  p.name = spec.op;
  p.devices = ring;  // device k is ring[k]
  std::vector<std::size_t> order(ring.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  auto add = [&](plan::Task t) {
    t.id = fmt::format("t{}", p.tasks.size());
    t.size = size;
    p.tasks.push_back(std::move(t));
  };
  plan::Task t;
  if (spec.op == "broadcast") {
    t.kind = plan::TaskKind::broadcast;
    t.devices = order;  // a chain in ring order: it enters each host once
    add(t);
  } else if (spec.op == "sendrecv") {
    for (std::size_t k = 0; k < ring.size(); ++k) {
      t.kind = plan::TaskKind::send;
      t.devices = {k, (k + 1) % ring.size()};
      t.stream = static_cast<int>(k % 2);  // a rank both sends and receives
      add(t);
    }
  } else {
    const auto op = plan::op_from(spec.op);
    if (!op) throw UsageError(fmt::format("no collective \"{}\"", spec.op));
    t.kind = plan::TaskKind::collective;
    t.op = *op;
    t.algorithm = spec.algorithm;
    t.protocol = spec.protocol;
    t.channels = spec.channels;
    t.devices = order;
    t.listed_order = true;  // already in ring order
    add(t);
  }
  return p;
}

std::vector<std::string> nccl_test_gpus(const plan::NcclTestsRun& run, const topology::Topology& topo) {
  const std::vector<std::string> hosts = run.hosts();
  std::vector<topology::NodeId> gpus;
  for (const auto& r : run.ranks) {
    const auto k = std::find(hosts.begin(), hosts.end(), r.host) - hosts.begin();
    const std::string name = fmt::format("h{}/gpu{}", k, r.device);
    const auto id = topo.find(name);
    if (!id)
      throw UsageError(
          fmt::format("rank {} ran on {} (host {} of the run) device {}, and {} has no GPU {}: give "
                      "a cluster of at least {} hosts of that machine",
                      r.rank, r.host, k, r.device, topo.name, name, hosts.size()));
    gpus.push_back(*id);
  }
  std::vector<std::string> out;
  for (topology::NodeId g : ring_order(topo, gpus)) out.push_back(topo.node(g).name);
  return out;
}

std::vector<Time> predict_nccl_test(const plan::NcclTestsRun& run, const topology::Topology& topo) {
  const std::vector<std::string> ring = nccl_test_gpus(run, topo);
  std::vector<Time> out;
  for (const auto& row : run.rows) out.push_back(row_time(run.op, ring, row.size, topo));
  return out;
}

NcclFit fit_nccl_tests(const std::vector<plan::NcclTestsRun>& runs, topology::Topology& topo) {
  if (runs.empty()) throw UsageError("no nccl-tests output to fit");
  std::vector<std::vector<std::string>> rings;
  for (const auto& r : runs) rings.push_back(nccl_test_gpus(r, topo));
  // The squared relative error of `rows` on the topology as it stands.
  auto cost = [&](const std::vector<Row>& rows) {
    double s = 0;
    for (const Row& k : rows) {
      const auto& row = runs[k.run].rows[k.row];
      const Time t = row_time(runs[k.run].op, rings[k.run], row.size, topo);
      s += std::pow(t.seconds() / row.time.seconds() - 1, 2);
    }
    return s;
  };
  std::vector<bool> multi_host;  // per run: over several hosts (it fits the network), or one (nvlink)
  for (const auto& run : runs) multi_host.push_back(run.hosts().size() > 1);
  NcclFit fit;
  for (const topology::LinkKind kind : {topology::LinkKind::nvlink, topology::LinkKind::network}) {
    std::vector<Row> rows;  // nvlink: the single-host runs; network: the others
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (multi_host[i] == (kind == topology::LinkKind::network))
        for (std::size_t k = 0; k < runs[i].rows.size(); ++k) rows.push_back({i, k});
    if (rows.empty()) continue;
    const auto preset = figures_of(topo, kind);  // (not a structured binding: lambdas below capture these)
    double eff = preset.first;
    Time lat = preset.second;
    for (int round = 0; round < 6; ++round) {
      const double eff0 = eff, lat0 = lat.seconds();
      eff = golden_min(
          [&](double e) {
            set_kind(topo, kind, e, lat);
            return cost(rows);
          },
          kMinEfficiency, 1.0, 1e-4);
      lat = Time::from_seconds(golden_min(
          [&](double l) {
            set_kind(topo, kind, eff, Time::from_seconds(l));
            return cost(rows);
          },
          0, kMaxLatencyS, 1e-5));
      set_kind(topo, kind, eff, lat);
      if (std::abs(eff - eff0) < 1e-4 && std::abs(lat.seconds() - lat0) < 1e-9) break;
    }
    NcclLinkFit lf{std::string(topology::to_string(kind)), eff, lat, rows.size(), 0, 0, {}, {}};
    fit.links.push_back(lf);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::vector<Time> t = predict_nccl_test(runs[i], topo);
    for (std::size_t k = 0; k < t.size(); ++k) fit.points.push_back({i, k, runs[i].rows[k].time, t[k]});
  }
  for (NcclLinkFit& lf : fit.links) {
    double sq = 0;
    for (const NcclFitPoint& p : fit.points)
      if (multi_host[p.run] == (lf.kind == "network")) {
        sq += p.error() * p.error();
        lf.max_abs_error = std::max(lf.max_abs_error, std::abs(p.error()));
      }
    lf.rms_error = std::sqrt(sq / static_cast<double>(lf.points));
    const double r = std::min(lf.rms_error, 0.9);
    lf.efficiency_spread = {std::max(kMinEfficiency, lf.efficiency * (1 - r)),
                            std::min(1.0, lf.efficiency * (1 + r))};
    lf.latency_spread = {Time::from_seconds(lf.latency.seconds() * (1 - r)),
                         Time::from_seconds(lf.latency.seconds() * (1 + r))};
  }
  return fit;
}

}  // namespace meshsim::sim
