#pragma once
// Device profile: what one GPU model achieves, each figure from a component
// measurement with its source and its spread. Format `meshsim.profile/1`
// (docs/calibration.md):
//
//   name, gpu_model   the profile's name and the catalogue model it is for
//   status            measured (our own `meshsim calibrate` runs), published
//                     (others' component benchmarks), estimate (a part no one
//                     has measured yet: datasheet and a related part's figures)
//   efficiency        per dtype class (fp32, fp16, fp64, int8): the achieved
//                     fraction of the dense peak on large GEMMs
//   fp8_efficiency    optional: GEMMs with FP8 operands, a fraction of the
//                     FP8 peak (absent: the fp16 class's, the same tensor cores)
//   attention_efficiency   fused attention's fraction of its dtype's peak
//   memory_bandwidth  what memory-bound kernels achieve
//   launch_overhead   a kernel launch, back to back
//   host_per_kernel   optional: an eager framework's host work per kernel it
//                     launches (Python, dispatch, autograd) on the machines
//                     this GPU comes in; what `--host-per-kernel eager` takes
//   measured          optional: a meshsim.calibration/1 file (relative to the
//                     profile) whose compute points for gpu_model correct the
//                     GEMM model as a calibration's do
//
// Every figure is {"value", "low", "high", "source"}: the value the
// simulator uses, the spread of its measurements (low ≤ value ≤ high, in
// the figure's own sense: low is the lower number) and where it comes from.

#include <array>
#include <optional>
#include <string>

#include "core/enum_names.h"
#include "core/json.h"
#include "core/units.h"
#include "plan/plan.h"

namespace meshsim::plan {

enum class ProfileStatus : std::uint8_t { measured, published, estimate };
inline constexpr EnumNames<ProfileStatus, 3> kProfileStatusNames{"profile status",
                                                                 {{{ProfileStatus::measured, "measured"},
                                                                   {ProfileStatus::published, "published"},
                                                                   {ProfileStatus::estimate, "estimate"}}}};

/// One figure, its spread and its source.
template <typename T>
struct Figure {
  T value{};
  T low{};
  T high{};
  std::string source;
};

struct Profile {
  std::string name;
  std::string gpu_model;
  ProfileStatus status = ProfileStatus::estimate;
  std::array<std::optional<Figure<double>>, kDTypeClasses> efficiency;  // by DTypeClass
  std::optional<Figure<double>> fp8_efficiency;
  std::optional<Figure<double>> attention_efficiency;
  std::optional<Figure<Bandwidth>> memory_bandwidth;
  std::optional<Figure<Time>> launch_overhead;
  std::optional<Figure<Time>> host_per_kernel;
  std::string measured;  // a calibration file, relative to the profile's directory; empty: none
};

/// ConfigError with the file and JSON path on any mistake (a missing
/// source, a value outside its spread, an efficiency outside (0, 1]).
[[nodiscard]] Profile profile_from_json(const Json& j, const std::string& file);
[[nodiscard]] Profile load_profile_file(const std::string& file);

}  // namespace meshsim::plan
