#pragma once
// Compute cost model: a roofline per GPU model.
//
//   time = max(flops / (peak(dtype) · compute_efficiency(dtype)),
//              bytes / memory_bandwidth) / efficiency
//          + launch_overhead
//
// Peaks are the vendors' public dense figures (no sparsity); the
// efficiencies, the memory bandwidth and the launch overhead are what a
// GPU achieves, from its device profile (sim/profiles.h) or a calibration
// (1.0 and the datasheet in the built-in model, the roofline bound):
// compute_efficiency per dtype class (fp32/i32, fp16/bf16, fp64, int8)
// is the achieved fraction of the peak on large GEMMs.
//
// A GEMM whose shape is known (gemm_time) is timed as a tiled library
// kernel runs it: the m × n output is cut into tiles of tm × tn, one
// thread block per tile, each streaming multiprocessor (SM) computing
// one tile at a time, so the tiles run in waves of `sms`. A partial tile
// costs a whole one (tile quantization) and a partial wave a whole one
// (wave quantization):
//
//   compute = ⌈tiles / sms⌉ · 2·tm·tn·k / (peak(dtype) · compute_efficiency / sms)
//   memory  = (m·k + k·n + m·n) · batch · element size / memory_bandwidth
//   time    = min over the tile shapes of max(compute, memory) / efficiency
//             + launch_overhead
//
// (tiles = ⌈m/tm⌉·⌈n/tn⌉·batch). The tile shapes are the tensor-core
// ones of cuBLASLt's tile list (cublasLtMatmulTile_t: 64×64 to 256×128);
// the mechanism is NVIDIA's "Matrix Multiplication Background" guide
// (dimension quantization effects). A large GEMM takes kernel_time's
// time plus at most one partial wave; a GEMM of a few dozen rows fills
// only part of the SMs. The same tile shapes serve every dtype. The
// library's other tricks (split-K for tall-and-thin products, stream-K)
// are not modelled.
//
// Measured GEMMs (a calibration's compute points, `meshsim calibrate
// --backend cuda --layers ...`, or published ones) override the model:
// gemm_time of a GEMM with exactly a measured shape and dtype is the
// measured time (one call, back to back, launch included). A GEMM near
// measured ones is the model's time scaled by the nearest measurement's
// ratio, measured / modelled: nearest in log2 of (the larger of m and n,
// the smaller, k, batch) among the points of its dtype within a factor 4
// in each of the four. So the measurements correct the model where it
// misses (on a Volta part a lone wave of tiles runs well below the rate per SM
// that large GEMMs reach: DeepBench's 2048 × 128 × 2048 takes 31 us, the
// model 16 us) and shapes far from every measurement keep the model.
//
// A fused attention kernel (plan::KernelList::Attention) runs its products
// tile by tile inside one kernel, at a rate of its own: the achieved
// fraction of the dtype's peak that such kernels reach,
// attention_efficiency (FlashAttention-2 reports 50-73 % of an A100's
// fp16 peak forward and backward, Dao 2023, §4.1; FlashAttention-3 up to
// 75 % of an H100's, Shah et al. 2024, §4.1), unset: the GEMMs'
// compute_efficiency:
//
//   time = max(flops / (peak(dtype) · attention_efficiency),
//              elements · element size / memory_bandwidth) / efficiency
//          + launch_overhead
//
// A kernel list takes the sum of its kernels' times, or, when a framework
// works on the host for every kernel it launches (host_per_kernel), at
// least launches × that: the GPU cannot run ahead of the host that feeds it.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "plan/calibration.h"
#include "plan/plan.h"
#include "topology/topology.h"

namespace meshsim::sim {

struct DeviceModel {
  std::string name;
  std::string source = "datasheet peak";  // where the achieved figures come from (a profile, a calibration)
  double fp32_flops = 0;                  // FLOP/s
  double fp16_flops = 0;                  // FLOP/s, also bf16 (tensor cores, dense)
  double fp64_flops = 0;
  double int8_ops = 0;
  double fp8_flops = 0;  // 0: no FP8 tensor cores
  Bandwidth memory_bandwidth;
  Time launch_overhead = Time::us(4);
  double efficiency = 1.0;
  std::array<double, 4> compute_efficiency{1.0, 1.0, 1.0, 1.0};  // indexed by DTypeClass
  std::optional<double> attention_efficiency;  // fused attention's fraction of the peak; unset: the GEMMs'
  std::optional<double> fp8_efficiency;        // FP8 GEMMs' fraction of the FP8 peak; unset: the fp16 class's
  // An eager framework's host work per launched kernel on this GPU's
  // machines (its profile's figure; zero: none known). Not charged unless a
  // plan's kernels ask for it (plan::KernelList::host_per_kernel).
  Time eager_host_per_kernel;
  Bytes memory_capacity;  // HBM of the SKU the peaks are for; zero when unknown
  int sms = 0;            // streaming multiprocessors; 0: unknown (gemm_time is the roofline)
  std::vector<plan::GemmPoint> measured_gemms;  // sorted by (dtype, m, n, k, batch); see above

  /// Adds (or replaces) a measured GEMM.
  void add_measured_gemm(const plan::GemmPoint& g);
  /// The measurement of exactly this GEMM, or nullptr.
  [[nodiscard]] const plan::GemmPoint* measured_gemm(const plan::KernelList::Gemm& g, plan::DType d) const;

  [[nodiscard]] double peak(plan::DType d) const;
  /// FP8 GEMMs' achieved fraction of the FP8 peak: fp8_efficiency, else the fp16 class's.
  [[nodiscard]] double fp8_fraction() const;
  /// Roofline time of a kernel; InternalError for negative inputs.
  [[nodiscard]] Time kernel_time(double flops, Bytes bytes, plan::DType d) const;
  /// `batch` independent products C[m×n] = A[m×k]·B[k×n] in one kernel,
  /// tiled as described above; InternalError for a non-positive size.
  [[nodiscard]] Time gemm_time(double m, double n, double k, plan::DType d, double batch = 1) const;
  /// The tile-and-wave model alone, whatever was measured.
  [[nodiscard]] Time modelled_gemm_time(double m, double n, double k, plan::DType d, double batch = 1) const;
  /// A GEMM with FP8 operands (Gemm::fp8): the tile-and-wave model at the
  /// FP8 peak times fp8_efficiency (unset: the fp16 class's, the same
  /// tensor cores), operands of one byte; measured GEMMs (of other dtypes) do not correct
  /// it. UsageError on a GPU without FP8 (fp8_flops 0).
  [[nodiscard]] Time fp8_gemm_time(const plan::KernelList::Gemm& g) const;
  /// One fused attention kernel in dtype `d`, as above.
  [[nodiscard]] Time attention_time(const plan::KernelList::Attention& a, plan::DType d) const;
  /// The measurement that corrects gemm_time of this GEMM (see above), or nullptr.
  [[nodiscard]] const plan::GemmPoint* nearest_measured_gemm(const plan::KernelList::Gemm& g,
                                                             plan::DType d) const;
  /// A task's kernels one after another (plan/kernels.h): Σ gemm_time over
  /// the GEMMs + Σ attention_time + Σ kernel_time of the memory-bound
  /// kernels, each with its launch; at least launches × host_per_kernel.
  [[nodiscard]] Time kernels_time(const plan::KernelList& k) const;

 private:
  // The tile-and-wave time of `g` at `rate` FLOP/s with operands of `elem` bytes.
  [[nodiscard]] Time tiled_time(const plan::KernelList::Gemm& g, double rate, double elem) const;
};

/// The built-in model of a GPU the hardware catalogue has peaks for
/// (hardware::modelled_gpu_names); nullptr otherwise.
[[nodiscard]] const DeviceModel* find_device_model(std::string_view gpu_model);
/// The model of that name in `overrides` (calibrated ones), else the built-in one.
[[nodiscard]] const DeviceModel* find_device_model(std::string_view gpu_model,
                                                   const std::vector<DeviceModel>& overrides);

/// Puts the compute model of every GPU model of `topo` into `models` (a
/// run's overrides, e.g. SimOptions::device_models), with its compute
/// efficiency set to `efficiency` when given (else the profiled, calibrated
/// or built-in one; a given one drops the measured GEMMs, which would
/// correct it back); returns a line saying what each GPU model computes at
/// for `dtype` and where that comes from (DeviceModel::source), and saying
/// so when that is the datasheet peak itself.
std::string apply_compute_efficiency(const topology::Topology& topo, std::vector<DeviceModel>& models,
                                     std::optional<double> efficiency, plan::DType dtype);

/// A line saying what each GPU model of `topo` computes FP8 GEMMs at (its
/// fp8_efficiency, or the fp16 class's) and where that comes from.
[[nodiscard]] std::string fp8_compute_line(const topology::Topology& topo,
                                           const std::vector<DeviceModel>& models);

/// An eager framework's host work per kernel on `topo`'s machines: the
/// largest eager_host_per_kernel among its GPU models (in `models`, else
/// built in); UsageError naming a GPU model whose compute model has none.
[[nodiscard]] Time eager_host_per_kernel(const topology::Topology& topo,
                                         const std::vector<DeviceModel>& models);

}  // namespace meshsim::sim
