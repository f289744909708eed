#include "sim/kernel/numeric.h"

#include <algorithm>
#include <cmath>

#include "sim/kernel/engine.h"

namespace meshsim::sim::kernel {

Time duration_up(double seconds) {
  if (!(seconds > 0)) return Time::zero();
  const double ps = std::ceil(seconds * kPsPerSecond);
  if (!(ps < static_cast<double>(Engine::kClockLimit.count_ps()))) Engine::clock_overflow();
  return Time::ps(std::max<std::int64_t>(1, static_cast<std::int64_t>(ps)));
}

}  // namespace meshsim::sim::kernel
