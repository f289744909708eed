#include "sim/calibrate_apply.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "hardware/gpus.h"

namespace meshsim::sim {

void apply_links(const plan::Calibration& c, topology::Topology& topo, const std::string& file,
                 SpreadEnd end) {
  for (const auto& lc : c.links) {
    const auto kind = topology::link_kind_from(lc.kind);
    if (!kind)
      throw ConfigError(
          file, fmt::format("links.{}", lc.kind),
          fmt::format("unknown link kind \"{}\" (expected nvlink, pcie, smp or network)", lc.kind));
    if (lc.latency && *lc.latency > topology::kMaxHopLatency)
      throw ConfigError(file, fmt::format("links.{}.latency", lc.kind), "a hop latency is between 0 and 1 s");
  }
  for (const auto& lc : c.links) {
    std::optional<double> efficiency = lc.efficiency;
    std::optional<Time> latency = lc.latency;
    if (end != SpreadEnd::value && lc.efficiency_spread)
      efficiency = end == SpreadEnd::low ? lc.efficiency_spread->first : lc.efficiency_spread->second;
    if (end != SpreadEnd::value && lc.latency_spread)  // the slow end has the longer latency
      latency = end == SpreadEnd::low ? lc.latency_spread->second : lc.latency_spread->first;
    for (topology::LinkId id = 0; id < topo.link_count(); ++id) {
      const auto& l = topo.link(id);
      if (l.kind != *topology::link_kind_from(lc.kind)) continue;
      topo.set_link_efficiency_latency(id, efficiency.value_or(l.efficiency), latency.value_or(l.latency));
    }
  }
}

std::vector<DeviceModel> calibrated_models(const plan::Calibration& c, const std::string& file,
                                           const std::vector<DeviceModel>& base) {
  std::vector<DeviceModel> out;
  for (std::size_t i = 0; i < c.compute.size(); ++i) {
    const auto& cc = c.compute[i];
    const DeviceModel* from = find_device_model(cc.gpu_model, base);
    if (from == nullptr)
      throw ConfigError(file, fmt::format("compute[{}].gpu_model", i),
                        fmt::format("no built-in peaks for GPU model \"{}\" (known: {})", cc.gpu_model,
                                    hardware::modelled_gpu_names()));
    DeviceModel m = *from;
    m.source = fmt::format("calibration {}", file);
    if (!cc.points.empty()) m.measured_gemms.clear();  // this machine's GEMMs, not the profile's
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
                       std::vector<DeviceModel>& models, SpreadEnd end) {
  apply_links(c, topo, file, end);
  for (DeviceModel& m : calibrated_models(c, file, models)) {
    auto slot =
        std::find_if(models.begin(), models.end(), [&](const DeviceModel& d) { return d.name == m.name; });
    if (slot != models.end())
      *slot = std::move(m);
    else
      models.push_back(std::move(m));
  }
}

std::optional<std::string> calibration_gpu_mismatch(const plan::Calibration& c,
                                                    const topology::Topology& topo) {
  const std::vector<std::string> cluster = topo.gpu_models();
  for (const plan::ComputeCalibration& cc : c.compute)
    if (std::find(cluster.begin(), cluster.end(), cc.gpu_model) == cluster.end())
      return fmt::format("it measured the {}, and the cluster's GPUs are the {}", cc.gpu_model,
                         fmt::join(cluster, ", the "));
  return std::nullopt;
}

std::vector<DeviceModel> retargeted_models(const plan::Calibration& c, const topology::Topology& topo,
                                           const std::vector<DeviceModel>& base, const std::string& file) {
  std::vector<DeviceModel> out;
  if (c.compute.empty()) return out;
  const plan::ComputeCalibration& cc = c.compute.front();
  for (const std::string& name : topo.gpu_models()) {
    const DeviceModel* from = find_device_model(name, base);
    if (from == nullptr) continue;  // the pipeline builder names a GPU without a model
    DeviceModel m = *from;
    m.source = fmt::format("calibration {} of the {}", file, cc.gpu_model);
    for (std::size_t k = 0; k < cc.efficiency.size(); ++k)
      if (cc.efficiency[k]) m.compute_efficiency[k] = *cc.efficiency[k];
    if (cc.attention_efficiency) m.attention_efficiency = cc.attention_efficiency;
    if (cc.launch_overhead) m.launch_overhead = *cc.launch_overhead;
    m.measured_gemms.clear();  // another GPU's times
    out.push_back(std::move(m));
  }
  return out;
}

topology::VirtualGpu virtual_machine(const plan::Plan& p, const topology::Topology& topo,
                                     const plan::Calibration& c) {
  if (!c.copy) throw UsageError("a calibration without a copy fit describes no virtual devices");
  const plan::CopyFit& copy = *c.copy;
  // (A plan without devices gets no machine: virtual_gpu_topology says so.)
  std::string model = p.devices.empty() ? std::string() : topo.node(topo.at(p.devices.front())).model;
  if (c.backend == "cuda" && !c.compute.empty()) model = c.compute.front().gpu_model;
  topology::VirtualGpu v = topology::virtual_gpu_topology(
      p.devices, model, copy.bandwidth, copy.aggregate_bandwidth.value_or(copy.bandwidth), copy.latency);
  if (c.backend == "host")  // the devices are buffers in the host's memory; compute is timed as on `model`
    v.topology.name = fmt::format("virtual devices in host memory (compute timed as on the {})",
                                  model.empty() ? std::string("plan's GPU") : model);
  return v;
}

}  // namespace meshsim::sim
