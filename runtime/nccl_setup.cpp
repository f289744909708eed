#include "runtime/nccl_setup.h"

#include <cstdlib>

namespace meshsim::runtime {

ncclDataType_t nccl_type(plan::DType d) {
  switch (d) {
    case plan::DType::f32: return ncclFloat32;
    case plan::DType::f16: return ncclFloat16;
    case plan::DType::bf16: return ncclBfloat16;
    case plan::DType::f64: return ncclFloat64;
    case plan::DType::i32: return ncclInt32;
    case plan::DType::i8: return ncclInt8;
    case plan::DType::u8: return ncclUint8;
  }
  return ncclUint8;
}

ForcedChoices::ForcedChoices(const NcclComm& c) {
  // Everything that may throw (the values, the old values saved) comes
  // before the first variable is set: a constructor that throws has no
  // destructor to put them back.
  const std::string ch = c.channels > 0 ? std::to_string(c.channels) : std::string();
  const std::pair<const char*, const std::string*> wanted[] = {{"NCCL_ALGO", &c.nccl_algo},
                                                               {"NCCL_PROTO", &c.nccl_proto},
                                                               {"NCCL_MIN_NCHANNELS", &ch},
                                                               {"NCCL_MAX_NCHANNELS", &ch}};
  for (const auto& [name, value] : wanted) save(name, *value);
  for (const auto& [name, value] : wanted)
    if (!value->empty()) setenv(name, value->c_str(), 1);
}

ForcedChoices::~ForcedChoices() {
  for (const auto& [name, old] : saved_)
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
}

void ForcedChoices::save(const char* name, const std::string& value) {
  if (value.empty()) return;
  const char* old = std::getenv(name);
  saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
}

}  // namespace meshsim::runtime
