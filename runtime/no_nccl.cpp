// Builds without CUDA or without NCCL's header: the NCCL backend says why it is absent.

#include <fmt/format.h>

#include "core/error.h"
#include "runtime/calibrate.h"
#include "runtime/nccl_backend.h"

namespace meshsim::runtime {

namespace {
[[noreturn]] void absent(const char* what) {
  throw UsageError(
      fmt::format("{} needs a build with CUDA and NCCL (nccl.h next to the CUDA toolkit); this one has "
                  "neither or only CUDA",
                  what));
}
}  // namespace

std::unique_ptr<Backend> make_nccl_backend(const NcclBackendOptions& /*opts*/) {
  absent("the nccl backend");
}
plan::Calibration calibrate_nccl(const CalibrateOptions& /*opts*/) {
  absent("nccl calibration");
}

}  // namespace meshsim::runtime
