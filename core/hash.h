#pragma once
// Stable hashes (the same value on every machine and run): FNV-1a, 64-bit,
// of bytes, for result fingerprints; hash_words, of 64-bit words, for
// in-memory tables; splitmix64, a mixer of one word (tie-breaking ranks,
// test patterns).

#include <cstddef>
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

/// hash_words as the hasher of an unordered map keyed by a list of words.
struct WordsHash {
  std::size_t operator()(std::span<const std::int64_t> k) const { return hash_words(k); }
};

/// Steele, Lea and Flood's SplitMix64 step: a bijective mix of one word.
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

}  // namespace meshsim
