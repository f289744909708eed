#pragma once
// NVLink generations: per lane (one link), per direction, by the GPU's
// compute capability (nvlink_generation(sm)):
//
//   sm60 NVLink 1  20 GB/s, eff 0.90  (NCCL models 18 GB/s)
//   sm70 NVLink 2  25 GB/s, eff 0.80  (20 GB/s)
//   sm80 NVLink 3  25 GB/s, eff 0.80  (20 GB/s)
//   sm86 NVLink 3 bridge (GA102) 14.0625 GB/s, eff 0.853 (12 GB/s)
//   sm90 NVLink 4  25 GB/s, eff 0.824 (20.6 GB/s)
//   sm100 NVLink 5 50 GB/s, eff 0.802 (40.1 GB/s)
//
// Line rates are the vendors' per-link figures; efficiencies turn them into
// NCCL's per-link model (src/graph/topo.h, SM*_NVLINK_BW).

#include <string_view>

#include "core/units.h"

namespace meshsim::hardware {

/// One row of the table above.
struct NvlinkGeneration {
  int min_sm = 0;           // first compute capability of the row
  std::string_view name;    // "NVLink 4"
  Bandwidth lane;           // line rate per lane, per direction
  double efficiency = 1.0;  // NCCL's model / line rate
};

/// The row for a GPU of compute capability `sm` (major × 10 + minor): the
/// row with the largest min_sm <= sm (the first row below sm 60).
[[nodiscard]] const NvlinkGeneration& nvlink_generation(int sm);

}  // namespace meshsim::hardware
