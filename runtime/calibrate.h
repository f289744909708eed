#pragma once
// `meshsim calibrate`: measure the machine a backend runs on and write a
// plan::Calibration (meshsim.calibration/1).
//
// host   memcpy between two host arrays, sizes min..max (x4 steps), the
//        fastest of `repeats` runs per size → copy fit (latency,
//        bandwidth); the same largest copy on every worker thread at once
//        → aggregate bandwidth. These describe the host backend's virtual
//        devices.
// cuda   (cuda_backend.cpp) device-to-device cudaMemcpyAsync on one GPU
//        (the virtual devices' copies), concurrent copies on 8 streams, pinned
//        host↔device copies, every peer pair when there are several GPUs,
//        square GEMMs per dtype through cuBLAS (efficiency against the
//        built-in peak), launch overhead, and every GEMM of the `layers`
//        kernel lists (their measured times).
// nccl   (nccl_backend.cpp) all-reduce, all-gather and broadcast busbw
//        versus size over every local GPU, as nccl-tests reports them.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "plan/calibration.h"

namespace meshsim::runtime {

struct CalibrateOptions {
  std::string backend = "host";
  Bytes min_size = Bytes::KiB(4);
  Bytes max_size = Bytes::MiB(256);
  int repeats = 5;
  int threads = 0;                                   // host: 0 = the hardware's threads
  std::function<void(const std::string&)> progress;  // one line per measurement group
  /// cuda: the dense peak FLOP/s of a GPU model for a dtype (0 when unknown),
  /// against which GEMM efficiencies are written; none: no efficiencies.
  std::function<double(std::string_view gpu_model, plan::DType)> peak_flops;
  /// cuda: kernel lists whose GEMMs are timed one by one (each distinct
  /// shape once) and written as compute points, which the simulator uses
  /// in place of its GEMM model for those shapes.
  std::vector<plan::KernelList> layers;
};

/// UsageError for a backend this build lacks or nonsense options.
[[nodiscard]] plan::Calibration calibrate(const CalibrateOptions& opts);

/// The sizes a sweep visits: min, 4·min, ... up to max (max included).
[[nodiscard]] std::vector<Bytes> sweep_sizes(Bytes min, Bytes max);

// Backends compiled only with CUDA (cuda_backend.cpp, nccl_backend.cpp);
// without it they throw UsageError.
[[nodiscard]] plan::Calibration calibrate_cuda(const CalibrateOptions& opts);
[[nodiscard]] plan::Calibration calibrate_nccl(const CalibrateOptions& opts);

}  // namespace meshsim::runtime
