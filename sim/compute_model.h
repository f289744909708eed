#pragma once
// Compute cost model: a roofline per GPU model.
//
//   time = max(flops / (peak(dtype) · compute_efficiency(dtype)),
//              bytes / memory_bandwidth) / efficiency
//          + launch_overhead
//
// Peaks are the vendors' public dense figures (no sparsity); the
// efficiencies are what calibration fits (1.0 until it does):
// compute_efficiency per dtype class (fp32/i32, fp16/bf16, fp64, int8)
// is the achieved fraction of the peak on large GEMMs.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "plan/plan.h"
#include "topology/topology.h"

namespace meshsim::sim {

struct DeviceModel {
  std::string name;
  double fp32_flops = 0;  // FLOP/s
  double fp16_flops = 0;  // FLOP/s, also bf16 (tensor cores, dense)
  double fp64_flops = 0;
  double int8_ops = 0;
  Bandwidth memory_bandwidth;
  Time launch_overhead = Time::us(4);
  double efficiency = 1.0;
  std::array<double, 4> compute_efficiency{1.0, 1.0, 1.0, 1.0};  // indexed by DTypeClass
  Bytes memory_capacity;  // HBM of the SKU the peaks are for; zero when unknown

  [[nodiscard]] double peak(plan::DType d) const;
  /// Roofline time of a kernel; InternalError for negative inputs.
  [[nodiscard]] Time kernel_time(double flops, Bytes bytes, plan::DType d) const;
};

/// V100, A100 (40 GB), A100-80GB, H100, H200 (SXM); nullptr for an unknown model name.
[[nodiscard]] const DeviceModel* find_device_model(std::string_view gpu_model);
/// The model of that name in `overrides` (calibrated ones), else the built-in one.
[[nodiscard]] const DeviceModel* find_device_model(std::string_view gpu_model,
                                                   const std::vector<DeviceModel>& overrides);

/// Puts the compute model of every GPU model of `topo` into `models` (a
/// run's overrides, e.g. SimOptions::device_models), with its compute
/// efficiency set to `efficiency` when given (else the calibrated or
/// built-in one); returns a line saying what each GPU model computes at
/// for `dtype`.
std::string apply_compute_efficiency(const topology::Topology& topo, std::vector<DeviceModel>& models,
                                     std::optional<double> efficiency, plan::DType dtype);

}  // namespace meshsim::sim
