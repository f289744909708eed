#pragma once
// Applying a calibration (plan/calibration.h) to a simulation: measured link
// efficiencies and hop latencies replace those of every link of their kind;
// measured compute efficiencies, launch overhead and memory bandwidth make
// compute models that replace the built-in ones of the same GPU model.

#include <optional>
#include <string>
#include <vector>

#include "plan/calibration.h"
#include "plan/plan.h"
#include "sim/compute_model.h"
#include "sim/profiles.h"
#include "topology/topology.h"
#include "topology/virtual_gpu.h"

namespace meshsim::sim {

/// Replaces efficiency and latency of every link of a calibrated kind, at
/// `end` of their spreads where the calibration gives one (low: the slow
/// end, the low efficiency and the high latency). ConfigError (file,
/// `links.<kind>`) for a kind that is not a link kind or a latency above a
/// hop's limit.
void apply_links(const plan::Calibration& c, topology::Topology& topo, const std::string& file,
                 SpreadEnd end = SpreadEnd::value);
/// The calibrated compute models: each GPU model's model in `base` (a
/// profile's, sim/profiles.h) or its built-in one, with what the
/// calibration measured in place of its figures (its GEMM points in place
/// of the base's); ConfigError (file) for a GPU model meshsim has no peaks for.
[[nodiscard]] std::vector<DeviceModel> calibrated_models(const plan::Calibration& c, const std::string& file,
                                                         const std::vector<DeviceModel>& base = {});
/// Both: `topo`'s links (at `end` of their spreads) and the compute
/// `models` become the calibration's, the models of the GPU models it did
/// not measure staying as they are (what every command's --calibration does).
void apply_calibration(const plan::Calibration& c, const std::string& file, topology::Topology& topo,
                       std::vector<DeviceModel>& models, SpreadEnd end = SpreadEnd::value);

/// Why `c`'s compute figures do not describe `topo`'s GPUs ("it measured
/// the H100, and the cluster's GPUs are the A100"), or nullopt when every
/// GPU model it measured is one of the cluster's (or it measured none).
[[nodiscard]] std::optional<std::string> calibration_gpu_mismatch(const plan::Calibration& c,
                                                                  const topology::Topology& topo);
/// `c`'s first compute entry taken for every GPU model of `topo` anyway:
/// its efficiencies and launch overhead on each model's own peaks and memory
/// (from `base` or built in), without its GEMM times, which are another
/// GPU's.
[[nodiscard]] std::vector<DeviceModel> retargeted_models(const plan::Calibration& c,
                                                         const topology::Topology& topo,
                                                         const std::vector<DeviceModel>& base,
                                                         const std::string& file);

/// The machine a run on the host or cuda backend is predicted on: the
/// plan's devices as virtual devices of one memory (topology/virtual_gpu.h),
/// each copy at the calibrated `copy` fit, all of them sharing its aggregate
/// bandwidth (the single-copy rate when it has none). Its GPU model: on the
/// cuda backend the one the calibration measured (compute tasks run on that
/// GPU, whatever the plan was made for); otherwise the one `topo` gives the
/// plan's first device; on the host backend the machine is named as host
/// memory. UsageError when `c` has no copy fit.
[[nodiscard]] topology::VirtualGpu virtual_machine(const plan::Plan& p, const topology::Topology& topo,
                                                   const plan::Calibration& c);

}  // namespace meshsim::sim
