#include "hardware/network_parts.h"

#include <fmt/format.h>

namespace meshsim::hardware {

const SwitchSpec* find_switch(std::string_view name) {
  for (const SwitchSpec& s : kSwitches)
    if (s.name == name) return &s;
  return nullptr;
}

std::string switch_names() {
  std::string out;
  for (const SwitchSpec& s : kSwitches) out += fmt::format("{}{}", out.empty() ? "" : ", ", s.name);
  return out;
}

const NicSpec* nic_of_rate(Bandwidth rate) {
  for (const NicSpec& n : kNics)
    if (n.rate == rate) return &n;
  return nullptr;
}

}  // namespace meshsim::hardware
