#include "core/unit_strings.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using Catch::Matchers::Contains;

TEST_CASE("sizes parse in decimal and binary units", "[units][parse]") {
  CHECK(parse_bytes("8B").count() == 8);
  CHECK(parse_bytes("1KB").count() == 1000);
  CHECK(parse_bytes("1 KiB").count() == 1024);
  CHECK(parse_bytes("1.5GiB").count() == 1'610'612'736);  // 1.5 × 2^30
  CHECK(parse_bytes("2TiB").count() == 2'199'023'255'552);
  CHECK(parse_bytes("1e3B").count() == 1000);
  CHECK(parse_bytes("0.25MB").count() == 250'000);
  CHECK(parse_bytes("  64MiB ").count() == 67'108'864);
}

TEST_CASE("rates: B is bytes, b is bits", "[units][parse]") {
  CHECK(parse_bandwidth("25GBps").bps() == 200'000'000'000);
  CHECK(parse_bandwidth("25 GB/s").bps() == 200'000'000'000);
  CHECK(parse_bandwidth("10Gbps").bps() == 10'000'000'000);
  CHECK(parse_bandwidth("400Gb/s").bps() == 400'000'000'000);
  CHECK(parse_bandwidth("7.2Tbps").bps() == 7'200'000'000'000);
  CHECK(parse_bandwidth("12.5KBps").bps() == 100'000);
  CHECK(parse_bandwidth("1bps").bps() == 1);
}

TEST_CASE("times parse to picoseconds", "[units][parse]") {
  CHECK(parse_time("1.5us").count_ps() == 1'500'000);
  CHECK(parse_time("500ns").count_ps() == 500'000);
  CHECK(parse_time("2ms").count_ps() == 2'000'000'000);
  CHECK(parse_time("1s").count_ps() == 1'000'000'000'000);
  CHECK(parse_time("7ps").count_ps() == 7);
  CHECK(parse_time("0.0004ns").count_ps() == 0);  // 0.4 ps rounds to nearest: 0
  CHECK(parse_time("0.0006ns").count_ps() == 1);  // 0.6 ps -> 1
  CHECK(parse_time("-3ns").count_ps() == -3000);
}

TEST_CASE("a number without its unit is an error listing the accepted units", "[units][parse]") {
  CHECK_THROWS_WITH(parse_bytes("25"), Contains("has no unit") && Contains("KiB") && Contains("GB"));
  CHECK_THROWS_WITH(parse_bandwidth("25"), Contains("has no unit") && Contains("Gbps") && Contains("GBps"));
  CHECK_THROWS_WITH(parse_time("25"), Contains("has no unit") && Contains("us"));
}

TEST_CASE("wrong units, negatives and garbage are rejected", "[units][parse]") {
  // "25GB" is a size, not a rate: the message says so and suggests GBps.
  CHECK_THROWS_WITH(parse_bandwidth("25GB"),
                    Contains("has unit \"GB\", which is not a rate unit") && Contains("GBps"));
  CHECK_THROWS_WITH(parse_bytes("10Gbps"), Contains("size unit"));
  CHECK_THROWS_WITH(parse_time("5 sec"), Contains("time unit"));
  CHECK_THROWS_WITH(parse_bytes("-1GB"), Contains("negative"));
  CHECK_THROWS_WITH(parse_bandwidth("-1Gbps"), Contains("negative"));
  CHECK_THROWS_WITH(parse_bytes("0.5B"), Contains("whole number of bytes"));
  CHECK_THROWS_WITH(parse_bytes("GB"), Contains("does not start with a number"));
  CHECK_THROWS_WITH(parse_bytes(""), Contains("does not start with a number"));
  CHECK_THROWS_WITH(parse_bytes("1e30TB"), Contains("too large"));
  CHECK_THROWS_AS(parse_bytes("1.2.3GB"), ParseError);
  // 30 significant digits times the TBps factor would overflow 128 bits:
  // refused, not wrapped.
  CHECK_THROWS_WITH(parse_bandwidth("999999999999999999999999999999TBps"), Contains("significant digits"));
  CHECK_THROWS_WITH(parse_time("99999999999999999999s"), Contains("too large"));
  // Trailing zeros are not significant digits.
  CHECK(parse_bandwidth("1.0000000000000000000000000000000Gbps").bps() == 1'000'000'000);
  CHECK(parse_bytes("1000000000000000000000000000000e-21B").count() == 1'000'000'000);
  // Very small values: 1e-40 B is not whole bytes; 1e-40 s rounds to 0 ps;
  // 10 Kbps written with a large mantissa and exponent -37 stays 10 Kbps.
  CHECK_THROWS_WITH(parse_bytes("1e-40B"), Contains("whole number of bytes"));
  CHECK(parse_time("1e-40s").count_ps() == 0);
  CHECK(parse_bandwidth("100000000000000000000000e-31Tbps").bps() == 10'000);
  CHECK_THROWS_AS(parse_bandwidth("fastGbps"), ParseError);
}

TEST_CASE("exact strings pick the largest exact unit and parse back", "[units][format]") {
  CHECK(exact_string(Bytes(1'610'612'736)) == "1.5GiB");
  CHECK(exact_string(Bytes(1000)) == "1KB");
  CHECK(exact_string(Bytes(1023)) == "1.023KB");
  CHECK(exact_string(Bytes(1025)) == "1.025KB");
  CHECK(exact_string(Bytes(1'000'001)) == "1000.001KB");  // 1.000001MB needs six decimals
  CHECK(exact_string(Bytes(7)) == "7B");
  CHECK(exact_string(Bytes(0)) == "0B");
  CHECK(exact_string(Bandwidth::GBps(25)) == "25GBps");
  CHECK(exact_string(Bandwidth::Gbps(10), RateStyle::bits) == "10Gbps");
  CHECK(exact_string(Bandwidth::Gbps(10), RateStyle::bytes) == "1.25GBps");
  CHECK(exact_string(Bandwidth::bits_per_second(3), RateStyle::bytes) == "3bps");  // not whole bytes
  CHECK(exact_string(Time::ns(500)) == "500ns");
  CHECK(exact_string(Time::ps(1'500'000)) == "1.5us");
  CHECK(exact_string(Time::ps(1'234'567)) == "1234.567ns");
  CHECK(exact_string(Time::ps(-2000)) == "-2ns");
  for (std::int64_t v : {1LL, 7LL, 999LL, 123'456'789LL, 85'899'345'920LL, 2'386'092'943LL}) {
    CHECK(parse_time(exact_string(Time::ps(v))).count_ps() == v);
    CHECK(parse_bytes(exact_string(Bytes(v))).count() == v);
    CHECK(parse_bandwidth(exact_string(Bandwidth::bits_per_second(v), RateStyle::bits)).bps() == v);
    CHECK(parse_bandwidth(exact_string(Bandwidth::bits_per_second(v), RateStyle::bytes)).bps() == v);
  }
}

TEST_CASE("human strings are short and carry their unit", "[units][format]") {
  CHECK(human_string(Bandwidth::GBps(25)) == "25 GB/s");
  CHECK(human_string(Bandwidth::Gbps(400), RateStyle::bits) == "400 Gb/s");
  CHECK(human_string(Bytes::GiB(1)) == "1 GiB");
  CHECK(human_string(Bytes(12)) == "12 B");
  CHECK(human_string(Time::ns(1500)) == "1.5 us");
  // Beyond four digits in the largest unit, the whole count (not 1e+05).
  CHECK(human_string(Time::s(100000)) == "100000 s");
  CHECK(human_string(Time::zero()) == "0 s");
  CHECK(human_string(Bytes((std::int64_t{1} << 40) * 20000)) == "20000 TiB");
}
