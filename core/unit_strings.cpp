#include "core/unit_strings.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim {

namespace {

__extension__ typedef __int128 i128;  // exact intermediate products

struct Unit {
  std::string_view name;
  std::int64_t factor;  // base units (bytes, bits/s, ps) per unit
};

constexpr std::array kSizeUnits{
    Unit{"B", 1},
    Unit{"KB", 1'000},
    Unit{"MB", 1'000'000},
    Unit{"GB", 1'000'000'000},
    Unit{"TB", 1'000'000'000'000},
    Unit{"KiB", std::int64_t{1} << 10},
    Unit{"MiB", std::int64_t{1} << 20},
    Unit{"GiB", std::int64_t{1} << 30},
    Unit{"TiB", std::int64_t{1} << 40},
};
constexpr std::array kRateUnits{
    Unit{"bps", 1},
    Unit{"Kbps", 1'000},
    Unit{"Mbps", 1'000'000},
    Unit{"Gbps", 1'000'000'000},
    Unit{"Tbps", 1'000'000'000'000},
    Unit{"Bps", 8},
    Unit{"KBps", 8'000},
    Unit{"MBps", 8'000'000},
    Unit{"GBps", 8'000'000'000},
    Unit{"TBps", 8'000'000'000'000},
};
constexpr std::array kTimeUnits{
    Unit{"ps", 1},
    Unit{"ns", 1'000},
    Unit{"us", 1'000'000},
    Unit{"ms", 1'000'000'000},
    Unit{"s", 1'000'000'000'000},
};

constexpr std::string_view kSizeHelp =
    "a size unit: B, KB, MB, GB, TB, KiB, MiB, GiB or TiB (e.g. \"1.5GiB\")";
constexpr std::string_view kRateHelp =
    "a rate unit: bps, Kbps, Mbps, Gbps, Tbps (bits/s) or Bps, KBps, MBps, GBps, TBps "
    "(bytes/s) (e.g. \"25GBps\", \"100Gbps\")";
constexpr std::string_view kTimeHelp = "a time unit: ps, ns, us, ms or s (e.g. \"1.5us\")";

// A decimal number m × 10^e held exactly. At most 24 significant digits,
// so that m × (largest unit factor, 8e12) stays far inside __int128.
constexpr int kMaxDigits = 24;
struct Decimal {
  bool negative = false;
  i128 mantissa = 0;
  int exponent = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

[[noreturn]] void fail(std::string_view text, std::string_view what, std::string_view help) {
  throw ParseError(fmt::format("\"{}\" {} (expected a number with {})", text, what, help));
}

// Splits "12.5 GiB" into a Decimal and the unit text "GiB".
std::pair<Decimal, std::string_view> split(std::string_view original, std::string_view help) {
  const std::string_view s = trim(original);
  Decimal d;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    d.negative = s[i] == '-';
    ++i;
  }
  int digits = 0;      // significant digits kept in the mantissa
  int all_digits = 0;  // every digit, leading zeros included
  bool seen_point = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    ++all_digits;
    if (digits == 0 && c == '0') {
      if (seen_point) --d.exponent;
      continue;  // leading zeros add no precision
    }
    if (digits >= kMaxDigits && c == '0') {
      if (!seen_point) ++d.exponent;  // a trailing zero of the integer part: × 10
      continue;                       // a trailing zero of the fraction changes nothing
    }
    if (digits >= kMaxDigits) fail(original, "has too many significant digits", help);
    d.mantissa = d.mantissa * 10 + (c - '0');
    ++digits;
    if (seen_point) --d.exponent;
  }
  if (all_digits == 0) fail(original, "does not start with a number", help);
  // Optional exponent: e/E followed by a signed integer (but not the "E" of a unit).
  if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (std::isdigit(static_cast<unsigned char>(s[i + 1])) ||
       ((s[i + 1] == '-' || s[i + 1] == '+') && i + 2 < s.size() &&
        std::isdigit(static_cast<unsigned char>(s[i + 2]))))) {
    ++i;
    bool neg = false;
    if (s[i] == '-' || s[i] == '+') {
      neg = s[i] == '-';
      ++i;
    }
    int e = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      e = e * 10 + (s[i] - '0');
      if (e > 60) fail(original, "has an exponent out of range", help);
    }
    d.exponent += neg ? -e : e;
  }
  return {d, trim(s.substr(i))};
}

std::optional<std::int64_t> find_unit(std::span<const Unit> units, std::string_view name) {
  for (const Unit& u : units)
    if (u.name == name) return u.factor;
  return std::nullopt;
}

i128 pow10(int n) {
  i128 r = 1;
  for (int k = 0; k < n; ++k) r *= 10;
  return r;
}

enum class Rounding { exact, nearest };

// value = mantissa × 10^exponent × factor, as an integer of base units.
std::int64_t to_base(const Decimal& d, std::int64_t factor, Rounding rounding, std::string_view original,
                     std::string_view help) {
  if (d.mantissa == 0) return 0;
  constexpr i128 kLimit = std::numeric_limits<std::int64_t>::max();
  i128 num = d.mantissa * factor;
  i128 den = 1;
  if (d.exponent >= 0) {
    for (int k = 0; k < d.exponent; ++k) {
      num *= 10;
      if (num > kLimit) fail(original, "is too large", help);
    }
  } else if (-d.exponent > 38) {
    // m × factor < 10^37, so the value is below a tenth of a base unit.
    if (rounding == Rounding::exact) fail(original, "is not a whole number of bytes", help);
    return 0;
  } else {
    den = pow10(-d.exponent);  // 10^38 fits in __int128
  }
  i128 q = num / den;
  const i128 r = num % den;
  if (r != 0) {
    if (rounding == Rounding::exact) fail(original, "is not a whole number of bytes", help);
    if (2 * r >= den) ++q;
  }
  if (q > kLimit) fail(original, "is too large", help);
  const auto v = static_cast<std::int64_t>(q);
  return d.negative ? -v : v;
}

std::int64_t parse_with(std::string_view text, std::span<const Unit> units, std::string_view help,
                        Rounding rounding, bool allow_negative) {
  auto [d, unit] = split(text, help);
  if (unit.empty()) fail(text, "has no unit", help);
  // "Gb/s" and "GB/s" are spellings of "Gbps" and "GBps".
  std::string name(unit);
  if (name.size() >= 3 && name.ends_with("/s")) name.replace(name.size() - 2, 2, "ps");
  const auto factor = find_unit(units, name);
  if (!factor)
    fail(text, fmt::format("has unit \"{}\", which is not {}", unit, help.substr(0, help.find(':'))), help);
  if (d.negative && d.mantissa != 0 && !allow_negative) fail(text, "is negative", help);
  return to_base(d, *factor, rounding, text, help);
}

// Writes v / factor with at most three decimals if that is exact.
std::optional<std::string> exact_in(std::int64_t v, std::int64_t factor) {
  const i128 scaled = static_cast<i128>(v) * 1000;
  if (scaled % factor != 0) return std::nullopt;
  const i128 thousandths = scaled / factor;
  const bool neg = thousandths < 0;
  const i128 a = neg ? -thousandths : thousandths;
  const auto whole = static_cast<std::int64_t>(a / 1000);
  auto frac = static_cast<int>(a % 1000);
  std::string out = fmt::format("{}{}", neg ? "-" : "", whole);
  if (frac != 0) {
    std::string f = fmt::format("{:03d}", frac);
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

// Largest unit (by factor, among `order`) that writes v exactly and not below 1.
std::string exact_with(std::int64_t v, std::span<const Unit> order) {
  if (v == 0) return fmt::format("0{}", order.back().name);
  const std::int64_t mag = v < 0 ? -v : v;
  for (const Unit& u : order) {
    if (mag < u.factor) continue;
    if (auto s = exact_in(v, u.factor)) return *s + std::string(u.name);
  }
  return fmt::format("{}{}", v, order.back().name);
}

// Four significant digits in the largest unit not above |v|; rates are
// written "GB/s" rather than "GBps" in tables.
std::string human_with(double v, std::span<const Unit> order) {
  const double mag = std::fabs(v);
  for (const Unit& u : order) {
    if (mag >= static_cast<double>(u.factor) || &u == &order.back()) {
      std::string name(u.name);
      if (name.ends_with("ps") && name != "ps") name.replace(name.size() - 2, 2, "/s");
      // Four significant digits; a large count in the biggest unit is
      // written whole ("100000 s"), not as 1e+05.
      const double x = v / static_cast<double>(u.factor);
      return std::fabs(x) >= 1e4 ? fmt::format("{:.0f} {}", x, name) : fmt::format("{:.4g} {}", x, name);
    }
  }
  return "?";
}

constexpr std::array kSizeBinaryDesc{Unit{"TiB", std::int64_t{1} << 40}, Unit{"GiB", std::int64_t{1} << 30},
                                     Unit{"MiB", std::int64_t{1} << 20}, Unit{"KiB", std::int64_t{1} << 10}};
constexpr std::array kSizeDecimalDesc{Unit{"TB", 1'000'000'000'000}, Unit{"GB", 1'000'000'000},
                                      Unit{"MB", 1'000'000}, Unit{"KB", 1'000}, Unit{"B", 1}};
constexpr std::array kRateBytesDesc{Unit{"TBps", 8'000'000'000'000}, Unit{"GBps", 8'000'000'000},
                                    Unit{"MBps", 8'000'000}, Unit{"KBps", 8'000}, Unit{"Bps", 8}};
constexpr std::array kRateBitsDesc{Unit{"Tbps", 1'000'000'000'000}, Unit{"Gbps", 1'000'000'000},
                                   Unit{"Mbps", 1'000'000}, Unit{"Kbps", 1'000}, Unit{"bps", 1}};
constexpr std::array kTimeDesc{Unit{"s", 1'000'000'000'000}, Unit{"ms", 1'000'000'000}, Unit{"us", 1'000'000},
                               Unit{"ns", 1'000}, Unit{"ps", 1}};
}  // namespace

Bytes parse_bytes(std::string_view text) {
  return Bytes(parse_with(text, kSizeUnits, kSizeHelp, Rounding::exact, false));
}

Bandwidth parse_bandwidth(std::string_view text) {
  return Bandwidth::bits_per_second(parse_with(text, kRateUnits, kRateHelp, Rounding::nearest, false));
}

Time parse_time(std::string_view text) {
  return Time::ps(parse_with(text, kTimeUnits, kTimeHelp, Rounding::nearest, true));
}

std::string exact_string(Bytes v) {
  // Binary units when they are exact (1.5GiB), else decimal ones (1.2GB), else bytes.
  const std::int64_t n = v.count();
  const std::int64_t mag = n < 0 ? -n : n;
  for (const Unit& u : kSizeBinaryDesc) {
    if (mag < u.factor) continue;
    if (auto s = exact_in(n, u.factor)) return *s + std::string(u.name);
  }
  return exact_with(n, kSizeDecimalDesc);
}

std::string exact_string(Bandwidth v, RateStyle style) {
  if (style == RateStyle::bytes && v.bps() % 8 == 0) return exact_with(v.bps(), kRateBytesDesc);
  return exact_with(v.bps(), kRateBitsDesc);
}

std::string exact_string(Time v) {
  return exact_with(v.count_ps(), kTimeDesc);
}

std::string human_string(Bytes v) {
  const auto n = static_cast<double>(v.count());
  if (std::fabs(n) < 1024.0) return fmt::format("{} B", v.count());
  return human_with(n, kSizeBinaryDesc);
}

std::string human_string(Bandwidth v, RateStyle style) {
  return human_with(static_cast<double>(v.bps()), style == RateStyle::bytes
                                                      ? std::span<const Unit>(kRateBytesDesc)
                                                      : std::span<const Unit>(kRateBitsDesc));
}

std::string human_string(Time v) {
  if (v == Time::zero()) return "0 s";  // not "0 ps", which suggests a tiny time
  return human_with(static_cast<double>(v.count_ps()), kTimeDesc);
}

}  // namespace meshsim
