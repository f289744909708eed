#pragma once
// FNV-1a, 64-bit: a fast, stable hash of bytes (the same value on every
// machine and run), for cache keys and result fingerprints.

#include <cstdint>
#include <span>
#include <string_view>

namespace meshsim {

[[nodiscard]] constexpr std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// The hash of the values' bytes.
[[nodiscard]] inline std::uint64_t fnv1a(std::span<const std::int64_t> values) {
  return fnv1a(std::string_view(reinterpret_cast<const char*>(values.data()), values.size_bytes()));
}

}  // namespace meshsim
