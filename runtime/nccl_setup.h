#pragma once
// Internal to the NCCL backend: how a plan's choices reach NCCL.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nccl.h>

#include "plan/plan.h"
#include "runtime/nccl_calls.h"

namespace meshsim::runtime {

/// NCCL's name for a plan element type.
[[nodiscard]] ncclDataType_t nccl_type(plan::DType d);

/// Sets NCCL_ALGO, NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS to what a
/// communicator's collectives force while it lives, restoring the caller's
/// environment after: NCCL reads them when it tunes a new communicator.
class ForcedChoices {
 public:
  explicit ForcedChoices(const NcclComm& c);
  ForcedChoices(const ForcedChoices&) = delete;
  ForcedChoices& operator=(const ForcedChoices&) = delete;
  ~ForcedChoices();

 private:
  // Keeps the variable's present value, to put back, when `value` will replace it.
  void save(const char* name, const std::string& value);
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace meshsim::runtime
