#include "hardware/hosts.h"

#include <fmt/format.h>

namespace meshsim::hardware {

std::span<const HostPreset> host_presets() {
  return kHostPresets;
}

const HostPreset* find_host_preset(std::string_view name) {
  for (const HostPreset& p : kHostPresets)
    if (p.name == name) return &p;
  return nullptr;
}

std::string host_preset_names() {
  std::string out;
  for (const HostPreset& p : kHostPresets) out += fmt::format("{}{}", out.empty() ? "" : ", ", p.name);
  return out;
}

}  // namespace meshsim::hardware
