#include "sim/calibrate_apply.h"

#include <fmt/format.h>

#include "core/error.h"
#include "hardware/gpus.h"

namespace meshsim::sim {

void apply_links(const plan::Calibration& c, topology::Topology& topo, const std::string& file) {
  for (const auto& lc : c.links) {
    const auto kind = topology::link_kind_from(lc.kind);
    if (!kind)
      throw ConfigError(
          file, fmt::format("links.{}", lc.kind),
          fmt::format("unknown link kind \"{}\" (expected nvlink, pcie, smp or network)", lc.kind));
    if (lc.latency && *lc.latency > topology::kMaxHopLatency)
      throw ConfigError(file, fmt::format("links.{}.latency", lc.kind), "a hop latency is between 0 and 1 s");
  }
  for (const auto& lc : c.links)
    for (topology::LinkId id = 0; id < topo.link_count(); ++id) {
      const auto& l = topo.link(id);
      if (l.kind != *topology::link_kind_from(lc.kind)) continue;
      topo.set_link_efficiency_latency(id, lc.efficiency.value_or(l.efficiency),
                                       lc.latency.value_or(l.latency));
    }
}

std::vector<DeviceModel> calibrated_models(const plan::Calibration& c, const std::string& file) {
  std::vector<DeviceModel> out;
  for (std::size_t i = 0; i < c.compute.size(); ++i) {
    const auto& cc = c.compute[i];
    const DeviceModel* base = find_device_model(cc.gpu_model);
    if (base == nullptr)
      throw ConfigError(file, fmt::format("compute[{}].gpu_model", i),
                        fmt::format("no built-in peaks for GPU model \"{}\" (known: {})", cc.gpu_model,
                                    hardware::modelled_gpu_names()));
    DeviceModel m = *base;
    for (std::size_t k = 0; k < cc.efficiency.size(); ++k)
      if (cc.efficiency[k]) m.compute_efficiency[k] = *cc.efficiency[k];
    if (cc.attention_efficiency) m.attention_efficiency = cc.attention_efficiency;
    if (cc.launch_overhead) m.launch_overhead = *cc.launch_overhead;
    if (cc.memory_bandwidth) m.memory_bandwidth = *cc.memory_bandwidth;
    for (const plan::GemmPoint& g : cc.points) m.add_measured_gemm(g);
    out.push_back(std::move(m));
  }
  return out;
}

void apply_calibration(const plan::Calibration& c, const std::string& file, topology::Topology& topo,
                       std::vector<DeviceModel>& models) {
  apply_links(c, topo, file);
  models = calibrated_models(c, file);
}

topology::VirtualGpu virtual_machine(const plan::Plan& p, const topology::Topology& topo,
                                     const plan::Calibration& c) {
  if (!c.copy) throw UsageError("a calibration without a copy fit describes no virtual devices");
  const plan::CopyFit& copy = *c.copy;
  // (A plan without devices gets no machine: virtual_gpu_topology says so.)
  std::string model = p.devices.empty() ? std::string() : topo.node(topo.at(p.devices.front())).model;
  if (c.backend == "cuda" && !c.compute.empty()) model = c.compute.front().gpu_model;
  return topology::virtual_gpu_topology(p.devices, model, copy.bandwidth,
                                        copy.aggregate_bandwidth.value_or(copy.bandwidth), copy.latency);
}

}  // namespace meshsim::sim
