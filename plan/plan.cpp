#include "plan/plan.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked.h"
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
  std::optional<std::int64_t> n = dtype_size(dtype);
  for (std::int64_t d : shape) n = n ? checked_mul(*n, d) : n;
  if (!n)
    throw UsageError(fmt::format("tensor \"{}\" of shape [{}] holds more than the 8 EiB that meshsim counts",
                                 name, fmt::join(shape, ", ")));
  return Bytes(*n);
}

bool carries_payload(const Plan& p) {
  for (const Task& t : p.tasks)
    if (!t.payload.empty()) return true;
  return false;
}

Box intersect(const Box& a, const Box& b) {
  MESHSIM_ASSERT(a.size() == b.size(), "boxes of one tensor");
  Box out;
  for (std::size_t d = 0; d < a.size(); ++d) {
    const std::int64_t lo = std::max(a[d].first, b[d].first);
    const std::int64_t hi = std::min(a[d].second, b[d].second);
    if (lo >= hi) return {};
    out.emplace_back(lo, hi);
  }
  return out;
}

Bytes box_bytes(const Tensor& t, const Box& box) {
  MESHSIM_ASSERT(box.size() == t.shape.size(), "box rank matches its tensor");
  std::optional<std::int64_t> n = dtype_size(t.dtype);
  for (const auto& [b, e] : box) n = n ? checked_mul(*n, e - b) : n;
  if (!n)
    throw UsageError(
        fmt::format("a box of tensor \"{}\" holds more than the 8 EiB that meshsim counts", t.name));
  return Bytes(*n);
}

Bytes region_bytes(const Plan& p, const Region& r) {
  return box_bytes(p.tensors.at(r.tensor), r.box);
}

std::size_t device_index(Plan& p, std::string_view name) {
  const auto it = std::find(p.devices.begin(), p.devices.end(), name);
  if (it != p.devices.end()) return static_cast<std::size_t>(it - p.devices.begin());
  p.devices.emplace_back(name);
  return p.devices.size() - 1;
}

void check_indices(const Plan& p) {
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    for (std::size_t d : t.devices)
      MESHSIM_ASSERT(d < p.devices.size(), fmt::format("task \"{}\": device index out of range", t.id));
    for (std::size_t d : t.deps)
      MESHSIM_ASSERT(d < p.tasks.size() && d != i, fmt::format("task \"{}\": bad dependency index", t.id));
  }
  check_payload_indices(p);
}

void check_payload_indices(const Plan& p) {
  const std::size_t devices = p.devices.size();
  const std::size_t buffers = p.buffers.size();
  for (const Buffer& b : p.buffers) {
    MESHSIM_ASSERT(b.device < devices, fmt::format("buffer \"{}\": device index out of range", b.name));
    MESHSIM_ASSERT(!b.tensor || *b.tensor < p.tensors.size(),
                   fmt::format("buffer \"{}\": tensor index out of range", b.name));
  }
  for (const Task& t : p.tasks) {
    for (const Region& r : t.payload)
      MESHSIM_ASSERT(r.tensor < p.tensors.size() && r.src_buffer < buffers && r.dst_buffer < buffers,
                     fmt::format("task \"{}\": region index out of range", t.id));
    MESHSIM_ASSERT(!t.kernels || (t.kind == TaskKind::compute && *t.kernels < p.kernel_sets.size()),
                   fmt::format("task \"{}\": kernel set index out of range", t.id));
  }
}

}  // namespace meshsim::plan
