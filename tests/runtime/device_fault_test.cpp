// A CUDA failure while a plan runs is a device fault (DeviceError, exit
// status 4); a machine without a usable GPU or driver is the environment
// (UsageError, exit status 2). The mapping needs the CUDA runtime's error
// strings, not a GPU.
#include <catch2/catch.hpp>

#include "core/error.h"

#ifdef MESHSIM_HAVE_CUDA
#include "runtime/cuda_util.h"

using meshsim::DeviceError;
using meshsim::UsageError;
using meshsim::runtime::cuda_check;

TEST_CASE("a CUDA error while running is a device fault, no GPU or driver is the environment") {
  CHECK_NOTHROW(cuda_check(cudaSuccess, "copy"));
  // Faults: the message names the call, then CUDA's own words.
  for (const cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorECCUncorrectable,
                              cudaErrorMemoryAllocation, cudaErrorLaunchTimeout}) {
    try {
      cuda_check(e, "task \"t0\"");
      FAIL("no exception for " << static_cast<int>(e));
    } catch (const DeviceError& err) {
      CHECK(std::string(err.what()).rfind("task \"t0\": ", 0) == 0);
      CHECK(std::string(err.what()).size() > std::string("task \"t0\": ").size());
    }
  }
  // Environment: a UsageError, never a DeviceError.
  for (const cudaError_t e : {cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorInvalidDevice}) {
    bool usage = false;
    try {
      cuda_check(e, "no usable GPU");
    } catch (const DeviceError&) {
      usage = false;
    } catch (const UsageError&) {
      usage = true;
    }
    CHECK(usage);
  }
}
#endif  // (a build without CUDA has no CUDA calls to classify)
