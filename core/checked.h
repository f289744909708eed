#pragma once
// Integer arithmetic on user numbers that reports overflow instead of
// wrapping: each caller turns std::nullopt into an error naming its input.

#include <cstdint>
#include <limits>
#include <optional>

namespace meshsim {

/// a * b, or nullopt when the product leaves the int64 range.
[[nodiscard]] inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// a + b, or nullopt when the sum leaves the int64 range.
[[nodiscard]] inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// a + b for non-negative counts (bytes), saturating at the int64 maximum.
[[nodiscard]] inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return checked_add(a, b).value_or(std::numeric_limits<std::int64_t>::max());
}

}  // namespace meshsim
