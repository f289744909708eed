#include "plan/phases.h"

namespace meshsim::plan {

std::vector<PhaseRow> compare_phases(const std::vector<PhaseEvent>& predicted,
                                     const std::vector<PhaseEvent>& measured) {
  std::array<Time, kPhases> p{}, m{};
  std::array<bool, kPhases> seen{};
  for (const PhaseEvent& e : predicted) {
    p[static_cast<std::size_t>(e.phase)] += e.duration;
    seen[static_cast<std::size_t>(e.phase)] = true;
  }
  for (const PhaseEvent& e : measured) {
    m[static_cast<std::size_t>(e.phase)] += e.duration;
    seen[static_cast<std::size_t>(e.phase)] = true;
  }
  std::vector<PhaseRow> out;
  for (std::size_t k = 0; k < kPhases; ++k) {
    if (!seen[k]) continue;
    PhaseRow row{static_cast<Phase>(k), p[k], m[k], std::nullopt};
    if (m[k] > Time::zero()) row.error = p[k].seconds() / m[k].seconds() - 1;
    out.push_back(row);
  }
  return out;
}

}  // namespace meshsim::plan
