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

Bandwidth positive_bandwidth(const JsonCursor& c) {
  const Bandwidth b = c.as_bandwidth();
  if (b.bps() <= 0) c.fail("must be greater than zero");
  return b;
}

Time non_negative_time(const JsonCursor& c) {
  const Time t = c.as_time();
  if (t < Time::zero()) c.fail("must not be negative");
  return t;
}

double fraction(const JsonCursor& c) {
  const double v = c.as_number();
  if (!(v > 0.0 && v <= 1.0)) c.fail(fmt::format("an efficiency is in (0, 1], got {}", v));
  return v;
}

}  // namespace meshsim::plan
