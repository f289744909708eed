#include "tools/cli/calibration_option.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/input_file.h"

namespace meshsim::cli {

namespace {

std::string profiles_dir() {
  return (std::filesystem::path(MESHSIM_SOURCE_DIR) / "configs" / "profiles").string();
}

// The profiles a run takes: the bundled ones, with `choice` (a name of one,
// or a profile file) in place of its GPU model's.
std::vector<sim::LoadedProfile> chosen_profiles(const std::string& choice) {
  std::vector<sim::LoadedProfile> out = bundled_profiles();
  if (choice.empty()) return out;
  const auto named = std::find_if(out.begin(), out.end(),
                                  [&](const sim::LoadedProfile& p) { return p.profile.name == choice; });
  if (named != out.end()) return {*named};
  if (path_kind(choice) == PathKind::none) {
    std::vector<std::string> names;
    for (const auto& p : out) names.push_back(p.profile.name);
    throw UsageError(
        fmt::format("--profile: no profile file '{}' and no profile of that name; known: peak, {}", choice,
                    fmt::join(names, ", ")));
  }
  sim::LoadedProfile mine = sim::load_profile(choice);
  std::erase_if(out,
                [&](const sim::LoadedProfile& p) { return p.profile.gpu_model == mine.profile.gpu_model; });
  out.push_back(std::move(mine));
  return out;
}

}  // namespace

const std::vector<sim::LoadedProfile>& bundled_profiles() {
  static const std::vector<sim::LoadedProfile> all = sim::load_profile_dir(profiles_dir());
  return all;
}

void CalibrationOption::add_to(CLI::App& cmd) {
  cmd.add_option("--calibration", file,
                 "Measurements from `meshsim calibrate` (meshsim.calibration/1): its link efficiencies, "
                 "latencies and compute figures replace the preset and profiled ones");
}

void CalibrationOption::add_with_profile_to(CLI::App& cmd) {
  add_to(cmd);
  takes_profile = true;
  cmd.add_option("--profile", profile,
                 "What the GPUs achieve: by default each GPU model's profile from configs/profiles/ "
                 "(GEMM and fused-attention efficiency, memory bandwidth, launch cost, each from a "
                 "component measurement); a profile's name or a meshsim.profile/1 file for its GPU model; "
                 "or `peak`, the datasheet roofline (an optimistic bound)");
  cmd.add_flag("--calibration-any-gpu", any_gpu,
               "Apply a calibration measured on another GPU model than the cluster's: its efficiencies "
               "and launch cost on the cluster's GPUs' own peaks (without it, that is refused)");
}

const plan::Calibration* CalibrationOption::get() {
  if (file.empty()) return nullptr;
  if (!loaded) loaded = plan::load_calibration_file(file);
  return &*loaded;
}

void CalibrationOption::apply(topology::Topology& topo, sim::SimOptions& opts, sim::SpreadEnd end) {
  if (takes_profile && profile != "peak") {
    const auto profiles = chosen_profiles(profile);
    opts.device_models = sim::profiled_models(topo, profiles, end);
    if (!profile.empty()) {  // chosen_profiles put the chosen one last
      const std::string& chosen = profiles.back().profile.gpu_model;
      if (std::none_of(opts.device_models.begin(), opts.device_models.end(),
                       [&](const sim::DeviceModel& m) { return m.name == chosen; }))
        throw UsageError(fmt::format("--profile {}: a profile of the {}, which the cluster does not have",
                                     profile, chosen));
    }
  }
  const plan::Calibration* c = get();
  if (c == nullptr) return;
  const auto mismatch = check_gpu ? sim::calibration_gpu_mismatch(*c, topo) : std::nullopt;
  if (!mismatch) {
    sim::apply_calibration(*c, file, topo, opts.device_models, end);
    return;
  }
  if (!any_gpu)
    throw UsageError(
        fmt::format("--calibration {}: {}; --calibration-any-gpu applies it anyway", file, *mismatch));
  sim::apply_links(*c, topo, file, end);
  for (sim::DeviceModel& m : sim::retargeted_models(*c, topo, opts.device_models, file)) {
    std::erase_if(opts.device_models, [&](const sim::DeviceModel& d) { return d.name == m.name; });
    opts.device_models.push_back(std::move(m));
  }
}

void CalibrationOption::apply(topology::Topology& topo, sim::SpreadEnd end) {
  if (const auto* c = get()) sim::apply_links(*c, topo, file, end);
}

}  // namespace meshsim::cli
