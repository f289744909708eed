#pragma once
// Stable hashes (the same value on every machine and run): FNV-1a, 64-bit,
// of bytes, for result fingerprints; hash_words, of 64-bit words, for
// in-memory tables.

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

/// A hash of 64-bit words for in-memory tables: one multiply and shift per
/// word (FNV-1a's byte loop costs eight dependent multiplies a word). Also
/// stable, but not the same value as fnv1a over the words' bytes.
[[nodiscard]] inline std::uint64_t hash_words(std::span<const std::int64_t> values) {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ values.size();
  for (const std::int64_t v : values) {
    h = (h ^ static_cast<std::uint64_t>(v)) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace meshsim
