#include "plan/json_fields.h"

#include "core/unit_strings.h"

namespace meshsim::plan {

DType dtype_from_json(const JsonCursor& c) {
  // The datasheet names (fp16, ...) read too; files are written with the canonical ones.
  if (auto v = kDTypeNames.parse(c.as_string())) return *v;
  return named(c, kDTypeNames);  // the message listing the names
}

Bytes positive_size(const JsonCursor& c) {
  const Bytes b = c.as_bytes();
  if (b.count() <= 0) c.fail(fmt::format("size must be greater than zero, got {}", exact_string(b)));
  return b;
}

}  // namespace meshsim::plan
