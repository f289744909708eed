#include "sim/kernel/numeric.h"

#include <algorithm>

#include "sim/kernel/engine.h"

namespace meshsim::sim::kernel {

Time duration_up(double seconds) {
  if (!(seconds > 0)) return Time::zero();
  const double ps = seconds * kPsPerSecond;
  if (!(ps < static_cast<double>(Engine::kClockLimit.count_ps()))) Engine::clock_overflow();
  // std::ceil, for a positive value below 2^63, without a call into libm
  // (the x86-64 baseline has no rounding instruction): the integer part,
  // plus one when there is a fraction.
  const auto whole = static_cast<std::int64_t>(ps);
  const std::int64_t up = whole + (static_cast<double>(whole) < ps ? 1 : 0);
  return Time::ps(std::max<std::int64_t>(1, up));
}

}  // namespace meshsim::sim::kernel
