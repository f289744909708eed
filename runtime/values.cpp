#include "runtime/values.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/hash.h"

namespace meshsim::runtime {

namespace {

template <typename T>
void put(T v, std::span<std::byte> out) {
  MESHSIM_ASSERT(out.size() >= sizeof(T), "room for one element");
  std::memcpy(out.data(), &v, sizeof(T));
}

template <typename T>
T get(std::span<const std::byte> in) {
  MESHSIM_ASSERT(in.size() >= sizeof(T), "one whole element");
  T v;
  std::memcpy(&v, in.data(), sizeof(T));
  return v;
}

// The top 16 bits of an f32, rounded to nearest even (NaN stays NaN).
std::uint16_t bf16_bits(float f) {
  const auto u = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16U) | 0x40U);
  const std::uint32_t round = 0x7FFFU + ((u >> 16U) & 1U);
  return static_cast<std::uint16_t>((u + round) >> 16U);
}

// IEEE binary16 from a double, rounded to nearest even.
std::uint16_t f16_bits(double v) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000U : 0U;
  const double a = std::fabs(v);
  if (std::isnan(v)) return 0x7E00U;
  if (a >= 65520.0) return static_cast<std::uint16_t>(sign | 0x7C00U);  // rounds to infinity
  if (a < 0x1p-14) {                                                    // subnormal: units of 2^-24
    const auto m = static_cast<std::uint16_t>(std::nearbyint(a * 0x1p24));
    return static_cast<std::uint16_t>(sign | m);
  }
  int e = 0;
  const double frac = std::frexp(a, &e);  // a = frac · 2^e, frac in [0.5, 1)
  auto m = static_cast<std::uint32_t>(std::nearbyint((frac * 2.0 - 1.0) * 1024.0));
  int exp = e - 1 + 15;
  if (m == 1024U) {
    m = 0;
    ++exp;
  }
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7C00U);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exp) << 10U) | m);
}

double from_f16(std::uint16_t h) {
  const double sign = (h & 0x8000U) != 0 ? -1.0 : 1.0;
  const int exp = (h >> 10U) & 0x1F;
  const int m = h & 0x3FF;
  if (exp == 0) return sign * std::ldexp(m, -24);
  if (exp == 31) return m == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(1024 + m, exp - 25);
}

}  // namespace

void encode_value(plan::DType d, double v, std::span<std::byte> out) {
  auto sat = [v](double lo, double hi) { return std::clamp(std::nearbyint(v), lo, hi); };
  switch (d) {
    case plan::DType::f32: put(static_cast<float>(v), out); return;
    case plan::DType::f64: put(v, out); return;
    case plan::DType::f16: put(f16_bits(v), out); return;
    case plan::DType::bf16: put(bf16_bits(static_cast<float>(v)), out); return;
    case plan::DType::i32: put(static_cast<std::int32_t>(sat(-2147483648.0, 2147483647.0)), out); return;
    case plan::DType::i8: put(static_cast<std::int8_t>(sat(-128, 127)), out); return;
    case plan::DType::u8: put(static_cast<std::uint8_t>(sat(0, 255)), out); return;
  }
}

double decode_value(plan::DType d, std::span<const std::byte> in) {
  switch (d) {
    case plan::DType::f32: return get<float>(in);
    case plan::DType::f64: return get<double>(in);
    case plan::DType::f16: return from_f16(get<std::uint16_t>(in));
    case plan::DType::bf16:
      return std::bit_cast<float>(static_cast<std::uint32_t>(get<std::uint16_t>(in)) << 16U);
    case plan::DType::i32: return get<std::int32_t>(in);
    case plan::DType::i8: return get<std::int8_t>(in);
    case plan::DType::u8: return get<std::uint8_t>(in);
  }
  return 0;
}

int test_value(const plan::Tensor& t, std::size_t tensor_index, int part, std::int64_t g) {
  const int offset = t.dtype == plan::DType::u8 ? 0 : -2;
  auto one = [&](int k) {
    const std::uint64_t key =
        (static_cast<std::uint64_t>(g) << 16U) + tensor_index + (static_cast<std::uint64_t>(k + 1) << 48U);
    return static_cast<int>(splitmix64(key) % 5U) + offset;
  };
  if (part >= 0) return one(part);
  int sum = 0;
  for (int k = 0; k < t.parts; ++k) sum += one(k);
  return sum;
}

}  // namespace meshsim::runtime
