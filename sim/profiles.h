#pragma once
// Device profiles (plan/profile.h) as compute models: a GPU model's built-in
// peaks with the profile's achieved figures, at the profile's value or at
// either end of its spread.
//
// The low end is the slow one: every efficiency and the memory bandwidth at
// their low ends, the launch overhead and host work per kernel at their
// high ends, and the measured GEMMs' times scaled by value / low of their
// class's efficiency (the measurements move with the rate they were
// measured at). The high end is
// the fast one, the other way round.
//
// The bundled profiles live in configs/profiles/, one per GPU model; every
// simulating command takes each of its GPU models' profile unless told
// otherwise (the datasheet peak, a named profile, or a calibration).

#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "plan/profile.h"
#include "sim/compute_model.h"
#include "topology/topology.h"

namespace meshsim::sim {

/// Which figure of a spread a model takes.
enum class SpreadEnd : std::uint8_t { value, low, high };
inline constexpr EnumNames<SpreadEnd, 3> kSpreadEndNames{
    "spread end", {{{SpreadEnd::value, "value"}, {SpreadEnd::low, "low"}, {SpreadEnd::high, "high"}}}};

/// A profile with its measured GEMMs, as read from `file`.
struct LoadedProfile {
  plan::Profile profile;
  std::string file;
  std::vector<plan::GemmPoint> points;  // the measured calibration's, for profile.gpu_model
};

/// Reads a profile and the calibration it names; ConfigError (file, path)
/// for mistakes in either, for a GPU model meshsim has no peaks for, or for
/// a measured calibration without a compute entry for that model.
[[nodiscard]] LoadedProfile load_profile(const std::string& file);
/// Every *.json of `dir`, sorted by name; ConfigError for two profiles of one GPU model.
[[nodiscard]] std::vector<LoadedProfile> load_profile_dir(const std::string& dir);
/// The profile for `gpu_model` among `profiles`, or nullptr.
[[nodiscard]] const LoadedProfile* profile_for(const std::vector<LoadedProfile>& profiles,
                                               std::string_view gpu_model);

/// The compute model of a profile's GPU at `end` of its spreads; its
/// `source` names the profile ("h100-sxm profile, measured").
[[nodiscard]] DeviceModel profiled_model(const LoadedProfile& p, SpreadEnd end = SpreadEnd::value);

/// The compute model of every GPU model of `topo` that has a profile in
/// `profiles`, at `end` (what SimOptions::device_models starts from).
[[nodiscard]] std::vector<DeviceModel> profiled_models(const topology::Topology& topo,
                                                       const std::vector<LoadedProfile>& profiles,
                                                       SpreadEnd end = SpreadEnd::value);

}  // namespace meshsim::sim
