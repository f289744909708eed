#include "plan/json_fields.h"

#include "core/unit_strings.h"

namespace meshsim::plan {

DType dtype_from_json(const JsonCursor& c) {
  // The datasheet names (fp16, ...) read too; files are written with the canonical ones.
  if (auto v = kDTypeNames.parse(c.as_string())) return *v;
  return named(c, kDTypeNames);  // the message listing the names
}

std::vector<std::int64_t> shape_from_json(const JsonCursor& c) {
  if (c.size() == 0) c.fail("a shape has at least one dimension");
  std::vector<std::int64_t> out;
  double elements = 1;
  for (std::size_t d = 0; d < c.size(); ++d) {
    out.push_back(c.at(d).as_int_in(1, std::int64_t{1} << 40));
    elements *= static_cast<double>(out.back());
  }
  if (elements > kMaxTensorElements) c.fail("the shape has more than 10^15 elements");
  return out;
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
