#pragma once
// Unit strings: parsing and formatting of sizes, rates and times.
//
// Every number with a unit in a config file or on the command line is a
// string with its unit ("1.5GiB", "25GBps", "10 Gbps", "1.5us"); a bare
// number is an error that lists the accepted units.
//
//   sizes  B, KB, MB, GB, TB (10^3 steps), KiB, MiB, GiB, TiB (2^10 steps)
//   rates  bps, Kbps, Mbps, Gbps, Tbps (bits/s) and Bps, KBps, MBps, GBps,
//          TBps (bytes/s); "Gb/s" and "GB/s" are accepted spellings.
//          Capital B is bytes, lower-case b is bits.
//   times  ps, ns, us, ms, s
//
// The number is decimal ("12.5", "1e3") and is converted exactly: sizes
// must come out as whole bytes; rates and times are rounded to the nearest
// bit/s and picosecond.
//
// exact_string() writes a value in the largest unit that represents it
// exactly with at most three decimals, so parse(exact_string(v)) == v; it is
// what exported files use. human_string() is for tables (3 significant
// digits, may round).

#include <string>
#include <string_view>

#include "core/units.h"

namespace meshsim {

/// How a rate prefers to be written: bits/s (network links) or bytes/s.
enum class RateStyle { bits, bytes };

[[nodiscard]] Bytes parse_bytes(std::string_view text);
[[nodiscard]] Bandwidth parse_bandwidth(std::string_view text);
[[nodiscard]] Time parse_time(std::string_view text);

[[nodiscard]] std::string exact_string(Bytes v);
[[nodiscard]] std::string exact_string(Bandwidth v, RateStyle style = RateStyle::bytes);
[[nodiscard]] std::string exact_string(Time v);

[[nodiscard]] std::string human_string(Bytes v);
[[nodiscard]] std::string human_string(Bandwidth v, RateStyle style = RateStyle::bytes);
[[nodiscard]] std::string human_string(Time v);

}  // namespace meshsim
