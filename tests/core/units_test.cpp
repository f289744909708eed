#include "core/units.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;

TEST_CASE("Time arithmetic keeps picoseconds exact", "[units]") {
  // 1 us + 500 ns = 1500 ns = 1,500,000 ps; halving truncates toward zero.
  const Time t = Time::us(1) + Time::ns(500);
  CHECK(t.count_ps() == 1'500'000);
  CHECK((t - Time::us(2)).count_ps() == -500'000);  // signed: subtraction never wraps
  CHECK((t * 3).count_ps() == 4'500'000);
  CHECK((Time::ps(7) / 2).count_ps() == 3);
  CHECK(Time::s(3) / Time::ms(500) == Approx(6.0));
  CHECK(Time::ms(1) < Time::s(1));
  // Range: 106 days of picoseconds fit; 9.2e18 ps.
  CHECK(Time::s(86400 * 106).count_ps() > 0);
}

TEST_CASE("Bytes and Bandwidth arithmetic", "[units]") {
  CHECK(Bytes::GiB(2).count() == 2'147'483'648);
  CHECK((Bytes::MiB(3) - Bytes::MiB(1)).count() == 2 * 1'048'576);
  CHECK(Bytes(10) / Bytes(4) == Approx(2.5));
  // NV2 = two 25 GB/s lanes = 50 GB/s = 4e11 bit/s.
  CHECK((Bandwidth::GBps(25) * 2).bps() == 400'000'000'000);
  // 80 % efficiency of 25 GB/s is 20 GB/s exactly.
  CHECK(Bandwidth::GBps(25).scaled(0.8).bps() == Bandwidth::GBps(20).bps());
  CHECK(Bandwidth::Gbps(400).GBps_f() == Approx(50.0));
  CHECK(Bandwidth::GBps(20) / Bandwidth::GBps(25) == Approx(0.8));
}

TEST_CASE("transfer time is exact to the picosecond, rounded up", "[units]") {
  // 2 GiB at 25 GB/s: 2^31 B / 25e9 B/s = 2^31 × 40 ps = 85,899,345,920 ps exactly.
  CHECK(transfer_time(Bytes::GiB(2), Bandwidth::GBps(25)).count_ps() == 85'899'345'920);
  // 2 GiB at 7.2 Tb/s: 2^34 bit / 7.2e12 bit/s = 2,386,092,942.22 ps -> 2,386,092,943 ps.
  CHECK(transfer_time(Bytes::GiB(2), Bandwidth::Gbps(7200)).count_ps() == 2'386'092'943);
  // 1 GiB at 400 Gb/s (NDR): 2^33 bit / 4e11 bit/s = 21,474,836,480 ps exactly.
  CHECK(transfer_time(Bytes::GiB(1), Bandwidth::Gbps(400)).count_ps() == 21'474'836'480);
  // 1 MiB at 450 GB/s (18 NVLink-4 lanes): 1,048,576 / 450e9 s = 2,330,168.89 ps -> 2,330,169.
  // A pre-truncated 2 ps/byte would give 2,097,152 ps, 10 % short.
  CHECK(transfer_time(Bytes::MiB(1), Bandwidth::GBps(450)).count_ps() == 2'330'169);
  // One byte at 450 GB/s is 2.22 ps: rounded up to 3 ps, never 0.
  CHECK(transfer_time(Bytes(1), Bandwidth::GBps(450)).count_ps() == 3);
  CHECK(transfer_time(Bytes(0), Bandwidth::GBps(1)).count_ps() == 0);
  // Operator form is the same computation.
  CHECK((Bytes::GiB(2) / Bandwidth::GBps(25)) == transfer_time(Bytes::GiB(2), Bandwidth::GBps(25)));
}

TEST_CASE("bytes moved in a time round down", "[units]") {
  // 1 ms at 25 GB/s = 25,000,000 B exactly; 1 ps at 25 GB/s = 0.025 B -> 0.
  CHECK((Bandwidth::GBps(25) * Time::ms(1)).count() == 25'000'000);
  CHECK(bytes_in(Time::ps(1), Bandwidth::GBps(25)).count() == 0);
  // Round trip: the time for N bytes moves at least N bytes.
  const Bytes n(123'456'789);
  const Bandwidth b = Bandwidth::Gbps(7200);
  CHECK(bytes_in(transfer_time(n, b), b) >= n);
  CHECK(bytes_in(transfer_time(n, b) - Time::ps(1), b) < n);
}

TEST_CASE("transfer_time rejects a zero bandwidth as a bug", "[units]") {
  CHECK_THROWS_AS(transfer_time(Bytes(1), Bandwidth()), InternalError);
}
