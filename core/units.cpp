#include "core/units.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim {

__extension__ typedef __int128 i128;  // exact intermediate products

Bandwidth Bandwidth::scaled(double factor) const {
  MESHSIM_ASSERT(std::isfinite(factor) && factor >= 0.0, "bandwidth scale factor must be finite and >= 0");
  const long double v = static_cast<long double>(bps_) * static_cast<long double>(factor);
  MESHSIM_ASSERT(v < static_cast<long double>(std::numeric_limits<std::int64_t>::max()),
                 "scaled bandwidth overflows");
  return Bandwidth(static_cast<std::int64_t>(std::llround(v)));
}

Time transfer_time(Bytes size, Bandwidth rate) {
  MESHSIM_ASSERT(rate.bps() > 0, "transfer_time needs a positive bandwidth");
  MESHSIM_ASSERT(size.count() >= 0, "transfer_time needs a non-negative size");
  const i128 num = static_cast<i128>(size.count()) * 8 * static_cast<i128>(1'000'000'000'000);
  const i128 den = rate.bps();
  const i128 ps = (num + den - 1) / den;
  MESHSIM_ASSERT(ps <= std::numeric_limits<std::int64_t>::max(), "transfer time overflows Time");
  return Time::ps(static_cast<std::int64_t>(ps));
}

Bytes bytes_in(Time t, Bandwidth rate) {
  MESHSIM_ASSERT(t.count_ps() >= 0 && rate.bps() >= 0, "bytes_in needs t >= 0 and rate >= 0");
  const i128 bits = static_cast<i128>(t.count_ps()) * rate.bps() / static_cast<i128>(1'000'000'000'000);
  return Bytes(static_cast<std::int64_t>(bits / 8));
}

Bytes checked_bytes(double bytes, std::string_view what) {
  // 2^63 is the first double past the int64 range.
  if (!(bytes >= 0 && bytes < 9223372036854775808.0))
    throw UsageError(
        fmt::format("{} come to {:.4g} bytes, outside the 0 to 8 EiB that meshsim counts: the "
                    "sizes or batch behind them are too large",
                    what, bytes));
  return Bytes(static_cast<std::int64_t>(bytes));
}

}  // namespace meshsim
