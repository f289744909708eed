#pragma once
// The fidelity report's "gemms" section: the GEMM model (sim/compute_model.h,
// tiles and waves at the calibration's efficiency, launch and memory
// bandwidth, its measured shapes set aside) against the GEMMs a calibration
// measured on a GPU (`meshsim calibrate --layers`), one row per model,
// tensor-parallel degree and microbatch: Σ model time over the GEMMs against
// Σ measured time.
//
// A model whose layers list their kernels (the U-Nets) is compared over its
// whole forward and backward pass, every layer split by channels and, where
// the microbatch divides over the ranks, by batch (calibration_kernel_lists).
//
//   "gemms": {"calibration": file (relative), "models": directory (relative),
//             "rows": [{"model": "gpt3-13b", "tp": 8, "microbatch": 1,
//                       "target": 0.1, "bound": 0.15,
//                       "calibration": file (optional: this row's own)}]}

#include <functional>
#include <string>
#include <vector>

#include "core/json.h"
#include "planner/fidelity.h"

namespace meshsim::planner {

/// ConfigError (file, JSON path) for a row whose GEMMs the calibration did
/// not all measure, an unknown model, or a bound narrower than its target.
void load_fidelity_gemms(const std::string& file, const JsonCursor& g, Fidelity& f);
void run_fidelity_gemms(const Fidelity& f, const std::function<void(const std::string&)>& progress,
                        std::vector<FidelityResult>& out);

}  // namespace meshsim::planner
