#include <filesystem>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"
#include "pipeline/pass_kernels.h"
#include "plan/calibration.h"
#include "sim/calibrate_apply.h"
#include "studies/fidelity.h"
#include "studies/reshard_study.h"

namespace meshsim::studies {

namespace {

struct LayerTimes {
  double measured = 0;  // s
  double model = 0;     // s
};

// The calibration's first compute model: with its measurements, and without.
std::pair<sim::DeviceModel, sim::DeviceModel> gemm_models(const std::string& file) {
  const plan::Calibration c = plan::load_calibration_file(file);
  const std::vector<sim::DeviceModel> models = sim::calibrated_models(c, file);
  if (models.empty()) throw ConfigError(file, "compute", "a GEMM fidelity row needs a compute calibration");
  sim::DeviceModel plain = models.front();
  plain.measured_gemms.clear();
  return {models.front(), plain};
}

// Σ over the layer's GEMMs; the first shape the calibration lacks, if any.
LayerTimes layer_times(const FidelityGemmRow& row, const model::Model& m, const sim::DeviceModel& measured,
                       const sim::DeviceModel& plain, std::string* missing) {
  LayerTimes t;
  for (const plan::KernelList& k : pipeline::calibration_kernel_lists(m, {row.tp}, {row.microbatch}))
    for (const auto& g : k.gemms) {
      const plan::GemmPoint* p = measured.measured_gemm(g, k.dtype);
      if (p == nullptr) {
        if (missing != nullptr && missing->empty())
          *missing =
              fmt::format("{} x {} x {} (batch {}) in {}", g.m, g.n, g.k, g.batch, plan::to_string(k.dtype));
        continue;
      }
      t.measured += p->time.seconds();
      t.model += plain.gemm_time(g.m, g.n, g.k, k.dtype, g.batch).seconds();
    }
  return t;
}

}  // namespace

void load_fidelity_gemms(const std::string& file, const JsonCursor& g, Fidelity& f) {
  g.allow_only({"calibration", "models", "rows"});
  f.gemm_calibration = file_beside(file, g["calibration"], "calibration");
  f.gemm_models = resolve_beside(file, g["models"].as_string());
  std::map<std::string, std::pair<sim::DeviceModel, sim::DeviceModel>> loaded;  // by calibration file
  const JsonCursor rows = g["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const JsonCursor r = rows.at(i);
    r.allow_only({"model", "tp", "microbatch", "target", "bound", "calibration"});
    FidelityGemmRow row;
    row.calibration =
        r.has("calibration") ? file_beside(file, r["calibration"], "calibration") : f.gemm_calibration;
    if (!loaded.contains(row.calibration)) loaded.emplace(row.calibration, gemm_models(row.calibration));
    const auto& [measured, plain] = loaded.at(row.calibration);
    row.model = r["model"].as_name();
    const std::string model_file = f.gemm_models + "/" + row.model + ".json";
    if (path_kind(model_file) != PathKind::file) r["model"].fail(fmt::format("no model file {}", model_file));
    row.tp = static_cast<int>(r["tp"].as_int_in(1, 1 << 20));
    row.microbatch = static_cast<int>(r["microbatch"].as_int_in(1, 1 << 20));
    std::tie(row.target, row.bound) = relative_tolerance(r);
    std::string missing;
    try {
      (void)layer_times(row, model::load_model_file(model_file), measured, plain, &missing);
    } catch (const UsageError& e) {
      r.fail(e.what());
    }
    if (!missing.empty())
      r.fail(
          fmt::format("{} measures no GEMM {} (meshsim calibrate --layers {} --tp {} --microbatch-sizes {})",
                      row.calibration, missing, row.model, row.tp, row.microbatch));
    f.gemm_rows.push_back(row);
  }
}

void run_fidelity_gemms(const Fidelity& f, const std::function<void(const std::string&)>& progress,
                        std::vector<FidelityResult>& out) {
  std::string loaded;  // rows of one calibration follow each other: load it once per run of them
  sim::DeviceModel measured, plain;
  for (const auto& row : f.gemm_rows) {
    if (row.calibration != loaded) {
      if (progress) progress(fmt::format("GEMMs measured in {}", row.calibration));
      std::tie(measured, plain) = gemm_models(row.calibration);
      loaded = row.calibration;
    }
    const std::string group = fmt::format("GEMMs ({})", measured.name);
    const std::string source = fmt::format("cuBLAS, measured by meshsim calibrate --layers ({})",
                                           std::filesystem::path(row.calibration).filename().string());
    const model::Model m = model::load_model_file(f.gemm_models + "/" + row.model + ".json");
    const LayerTimes t = layer_times(row, m, measured, plain, nullptr);
    out.push_back(
        fidelity_relative(group,
                          fmt::format("{} {} GEMMs, forward and backward, tp {}, microbatch {}", row.model,
                                      m.hidden > 0 ? "layer" : "model", row.tp, row.microbatch),
                          "s", t.measured, t.model, row.target, row.bound, source));
  }
}

}  // namespace meshsim::studies
