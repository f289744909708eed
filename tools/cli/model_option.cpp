#include "tools/cli/model_option.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"
#include "core/unit_strings.h"
#include "tools/cli/options.h"

namespace meshsim::cli {

namespace {
std::filesystem::path models_dir() {
  return std::filesystem::path(MESHSIM_SOURCE_DIR) / "configs" / "models";
}
}  // namespace

void add_model_option(CLI::App& cmd, std::string& model) {
  cmd.add_option("--model", model,
                 "Model: a meshsim.model/1 file, or a name from configs/models/ (gpt3-1.3b ... gpt3-175b, "
                 "llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, mixtral-8x22b, u-transformer-..., "
                 "unet-...)")
      ->required();
}

model::Model load_model_arg(const std::string& model) {
  if (path_kind(model) != PathKind::none) return model::load_model_file(model);
  const auto named = models_dir() / (model + ".json");
  if (model.find('/') == std::string::npos && path_kind(named.string()) != PathKind::none)
    return model::load_model_file(named.string());
  std::vector<std::string> names;
  if (std::filesystem::is_directory(models_dir()))
    for (const auto& e : std::filesystem::directory_iterator(models_dir()))
      if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  throw UsageError(
      fmt::format("no model file '{}' and no model of that name; known: {}", model, fmt::join(names, ", ")));
}

void add_compute_efficiency_option(CLI::App& cmd, std::optional<double>& efficiency) {
  cmd.add_option("--compute-efficiency", efficiency,
                 "Achieved fraction of the GPU's dense peak for the model's matrix work, in place of the "
                 "profile's or calibration's (their measured GEMMs no longer correct it; 1: the roofline)")
      ->check(number_in(0.01, 1.0));
}

void add_host_per_kernel_option(CLI::App& cmd, std::optional<std::string>& duration,
                                const std::string& default_note) {
  cmd.add_option("--host-per-kernel", duration,
                 "Host work of the framework per launched kernel: a duration (e.g. 40us), or `eager`, "
                 "the device profile's figure for an eager framework's Python, dispatch and autograd on "
                 "the GPU's machines; a pass takes at least its kernels x this (" +
                     default_note + ")");
}

Time host_per_kernel_value(const std::optional<std::string>& duration, Time otherwise,
                           const topology::Topology& topo, const std::vector<sim::DeviceModel>& models) {
  if (!duration) return otherwise;
  if (*duration == "eager") {
    try {
      return sim::eager_host_per_kernel(topo, models);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--host-per-kernel eager: {}", e.what()));
    }
  }
  const Time t = option_value("--host-per-kernel", *duration, parse_time);
  if (t < Time::zero() || t > Time::s(1))
    throw UsageError(fmt::format("--host-per-kernel: {} is not a duration from 0 to 1s", *duration));
  return t;
}

}  // namespace meshsim::cli
