#include "sim/profiles.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "hardware/gpus.h"
#include "plan/calibration.h"
#include "sim/kernel/numeric.h"

namespace meshsim::sim {

namespace {

// The figure at `end`; `slow_is_high` for figures where more is slower (a launch).
template <typename T>
T at(const plan::Figure<T>& f, SpreadEnd end, bool slow_is_high = false) {
  switch (end) {
    case SpreadEnd::value: return f.value;
    case SpreadEnd::low: return slow_is_high ? f.high : f.low;
    case SpreadEnd::high: return slow_is_high ? f.low : f.high;
  }
  return f.value;
}

}  // namespace

LoadedProfile load_profile(const std::string& file) {
  LoadedProfile lp{plan::load_profile_file(file), file, {}};
  if (find_device_model(lp.profile.gpu_model) == nullptr)
    throw ConfigError(file, "gpu_model",
                      fmt::format("no built-in peaks for GPU model \"{}\" (known: {})", lp.profile.gpu_model,
                                  hardware::modelled_gpu_names()));
  if (lp.profile.measured.empty()) return lp;
  const std::string measured =
      (std::filesystem::path(file).parent_path() / lp.profile.measured).lexically_normal().string();
  const plan::Calibration c = plan::load_calibration_file(measured);
  const auto entry =
      std::find_if(c.compute.begin(), c.compute.end(),
                   [&](const plan::ComputeCalibration& cc) { return cc.gpu_model == lp.profile.gpu_model; });
  if (entry == c.compute.end())
    throw ConfigError(
        file, "measured",
        fmt::format("{} has no compute entry for {}", lp.profile.measured, lp.profile.gpu_model));
  lp.points = entry->points;
  return lp;
}

std::vector<LoadedProfile> load_profile_dir(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<LoadedProfile> out;
  for (const std::string& f : files) {
    LoadedProfile p = load_profile(f);
    if (const LoadedProfile* twin = profile_for(out, p.profile.gpu_model))
      throw ConfigError(f, "gpu_model",
                        fmt::format("{} already has a profile ({})", p.profile.gpu_model, twin->file));
    out.push_back(std::move(p));
  }
  return out;
}

const LoadedProfile* profile_for(const std::vector<LoadedProfile>& profiles, std::string_view gpu_model) {
  for (const LoadedProfile& p : profiles)
    if (p.profile.gpu_model == gpu_model) return &p;
  return nullptr;
}

DeviceModel profiled_model(const LoadedProfile& lp, SpreadEnd end) {
  const plan::Profile& p = lp.profile;
  DeviceModel m = *find_device_model(p.gpu_model);  // load_profile checked it
  m.source = fmt::format("{} profile, {}", p.name, plan::kProfileStatusNames.name(p.status));
  if (end != SpreadEnd::value) m.source += fmt::format(", {} end", kSpreadEndNames.name(end));
  for (std::size_t k = 0; k < p.efficiency.size(); ++k)
    if (p.efficiency[k]) m.compute_efficiency[k] = at(*p.efficiency[k], end);
  if (p.fp8_efficiency) m.fp8_efficiency = at(*p.fp8_efficiency, end);
  if (p.attention_efficiency) m.attention_efficiency = at(*p.attention_efficiency, end);
  if (p.memory_bandwidth) m.memory_bandwidth = at(*p.memory_bandwidth, end);
  if (p.launch_overhead) m.launch_overhead = at(*p.launch_overhead, end, true);
  if (p.host_per_kernel) m.eager_host_per_kernel = at(*p.host_per_kernel, end, true);
  for (plan::GemmPoint g : lp.points) {
    const auto& eff = p.efficiency[static_cast<std::size_t>(plan::dtype_class(g.dtype))];
    if (eff && end != SpreadEnd::value)
      g.time = kernel::duration_up(g.time.seconds() * eff->value / at(*eff, end));
    m.add_measured_gemm(g);
  }
  return m;
}

std::vector<DeviceModel> profiled_models(const topology::Topology& topo,
                                         const std::vector<LoadedProfile>& profiles, SpreadEnd end) {
  std::vector<DeviceModel> out;
  for (const std::string& name : topo.gpu_models())
    if (const LoadedProfile* p = profile_for(profiles, name)) out.push_back(profiled_model(*p, end));
  return out;
}

}  // namespace meshsim::sim
