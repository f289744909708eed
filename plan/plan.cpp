#include "plan/plan.h"

#include <array>

#include "core/error.h"

namespace meshsim::plan {

std::int64_t dtype_size(DType d) {
  static constexpr std::array<std::int64_t, 7> kSizes{4, 2, 2, 8, 4, 1, 1};
  return kSizes.at(static_cast<std::size_t>(d));
}

DTypeClass dtype_class(DType d) {
  switch (d) {
    case DType::f32:
    case DType::i32: return DTypeClass::fp32;
    case DType::f16:
    case DType::bf16: return DTypeClass::fp16;
    case DType::f64: return DTypeClass::fp64;
    case DType::i8:
    case DType::u8: return DTypeClass::int8;
  }
  return DTypeClass::fp32;
}

Bytes Tensor::bytes() const {
  std::int64_t n = dtype_size(dtype);
  for (std::int64_t d : shape) n *= d;
  return Bytes(n);
}

bool carries_payload(const Plan& p) {
  for (const Task& t : p.tasks)
    if (!t.payload.empty()) return true;
  return false;
}

Bytes region_bytes(const Tensor& t, const Region& r) {
  MESHSIM_ASSERT(r.box.size() == t.shape.size(), "region rank matches its tensor");
  std::int64_t n = dtype_size(t.dtype);
  for (const auto& [b, e] : r.box) n *= e - b;
  return Bytes(n);
}

}  // namespace meshsim::plan
