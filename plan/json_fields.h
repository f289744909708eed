#pragma once
// Readers of the scalar fields the plan's formats share (plans, kernel
// sets, calibrations, models): each fails at the field's JSON path.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "core/enum_names.h"
#include "core/json.h"
#include "core/units.h"
#include "plan/plan.h"

namespace meshsim::plan {

/// The value of `names` spelled exactly as at `c` (by its name, not an
/// alias); ConfigError listing the names otherwise.
template <typename E, std::size_t N>
[[nodiscard]] E named(const JsonCursor& c, const EnumNames<E, N>& names) {
  const std::string s = c.as_string();
  if (auto v = names.parse(s); v && names.name(*v) == s) return *v;
  c.fail(fmt::format("unknown {} \"{}\" (expected {})", names.what(), s, names.list()));
}

/// A size at `c` that is more than zero bytes; ConfigError otherwise.
[[nodiscard]] Bytes positive_size(const JsonCursor& c);

/// A rate at `c` greater than zero; ConfigError otherwise.
[[nodiscard]] Bandwidth positive_bandwidth(const JsonCursor& c);

/// A duration at `c` of zero or more; ConfigError otherwise.
[[nodiscard]] Time non_negative_time(const JsonCursor& c);

/// An efficiency (an achieved fraction of a peak) at `c`, in (0, 1]; ConfigError otherwise.
[[nodiscard]] double fraction(const JsonCursor& c);

/// A dtype name ("f32", "bf16", ...; or fp32, fp16, fp64) at `c`; ConfigError listing the names otherwise.
[[nodiscard]] DType dtype_from_json(const JsonCursor& c);

/// A tensor's shape at `c` (a plan tensor's, a model layer's output): at
/// least one dimension, each 1 to 2^40, at most kMaxTensorElements in all.
[[nodiscard]] std::vector<std::int64_t> shape_from_json(const JsonCursor& c);

}  // namespace meshsim::plan
