#pragma once
// Compute cost model: a roofline per GPU model.
//
//   time = max(flops / peak(dtype), bytes / memory_bandwidth) / efficiency
//          + launch_overhead
//
// Peaks are the vendors' public dense figures (no sparsity); `efficiency`
// is what calibration fits (1.0 until it does).

#include <optional>
#include <string_view>

#include "core/units.h"
#include "sim/plan.h"

namespace meshsim::sim {

struct DeviceModel {
  std::string_view name;
  double fp32_flops = 0;  // FLOP/s
  double fp16_flops = 0;  // FLOP/s, also bf16 (tensor cores, dense)
  double fp64_flops = 0;
  double int8_ops = 0;
  Bandwidth memory_bandwidth;
  Time launch_overhead = Time::us(4);
  double efficiency = 1.0;

  [[nodiscard]] double peak(DType d) const;
  /// Roofline time of a kernel; InternalError for negative inputs.
  [[nodiscard]] Time kernel_time(double flops, Bytes bytes, DType d) const;
};

/// V100, A100, H100, H200 (SXM); nullptr for an unknown model name.
[[nodiscard]] const DeviceModel* find_device_model(std::string_view gpu_model);

}  // namespace meshsim::sim
