// Builds without the CUDA toolkit: the GPU backends say why they are absent.

#include <fmt/format.h>

#include "core/error.h"
#include "runtime/calibrate.h"
#include "runtime/cuda_backend.h"

namespace meshsim::runtime {

namespace {
[[noreturn]] void absent(const char* what) {
  throw UsageError(fmt::format(
      "{} needs a build with CUDA (configure with -DMESHSIM_CUDA=ON and a CUDA toolkit); this one has none",
      what));
}
}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& /*opts*/) {
  absent("the cuda backend");
}
plan::Calibration calibrate_cuda(const CalibrateOptions& /*opts*/) {
  absent("cuda calibration");
}

}  // namespace meshsim::runtime
