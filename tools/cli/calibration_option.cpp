#include "tools/cli/calibration_option.h"

namespace meshsim::cli {

void CalibrationOption::add_to(CLI::App& cmd) {
  cmd.add_option("--calibration", file,
                 "Measurements from `meshsim calibrate` (meshsim.calibration/1): its link efficiencies, "
                 "latencies and compute efficiencies replace the preset numbers");
}

const plan::Calibration* CalibrationOption::get() {
  if (file.empty()) return nullptr;
  if (!loaded) loaded = plan::load_calibration_file(file);
  return &*loaded;
}

void CalibrationOption::apply(topology::Topology& topo, sim::SimOptions& opts) {
  if (const auto* c = get()) sim::apply_calibration(*c, file, topo, opts.device_models);
}

void CalibrationOption::apply(topology::Topology& topo) {
  if (const auto* c = get()) sim::apply_links(*c, topo, file);
}

}  // namespace meshsim::cli
