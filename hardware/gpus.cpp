#include "hardware/gpus.h"

#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::hardware {

namespace {

// The models add_gpu registered, with the strings they point into. A deque
// never moves its elements, so pointers handed out stay valid.
struct Added {
  std::mutex mutex;
  std::deque<std::string> strings;
  std::deque<GpuSpec> specs;

  std::string_view keep(std::string_view s) { return strings.emplace_back(s); }
};

Added& added() {
  static Added a;
  return a;
}

// Calls f on every entry, built-in first, until it returns true.
template <typename F>
const GpuSpec* first(F f) {
  for (const GpuSpec& g : kBuiltinGpus)
    if (f(g)) return &g;
  Added& a = added();
  const std::lock_guard hold(a.mutex);
  for (const GpuSpec& g : a.specs)
    if (f(g)) return &g;
  return nullptr;
}

// How many of g's driver names `device` holds; 0 unless it holds them all.
int driver_match(const GpuSpec& g, std::string_view device) {
  int n = 0;
  for (std::string_view part : g.driver_names) {
    if (part.empty()) continue;
    if (device.find(part) == std::string_view::npos) return 0;
    ++n;
  }
  return n;
}

}  // namespace

std::vector<const GpuSpec*> gpus() {
  std::vector<const GpuSpec*> out;
  first([&](const GpuSpec& g) {
    out.push_back(&g);
    return false;
  });
  return out;
}

const GpuSpec* find_gpu(std::string_view name) {
  return first([&](const GpuSpec& g) { return g.name == name; });
}

const GpuSpec* gpu_for_device_name(std::string_view device) {
  const GpuSpec* best = nullptr;
  int most = 0;
  first([&](const GpuSpec& g) {
    if (const int n = driver_match(g, device); n > most) {
      best = &g;
      most = n;
    }
    return false;
  });
  return best;
}

const GpuSpec* gpu_for_sm(int sm) {
  return first([&](const GpuSpec& g) { return g.sm_default && g.sm == sm; });
}

std::string modelled_gpu_names() {
  std::string out;
  first([&](const GpuSpec& g) {
    if (g.modelled()) out += (out.empty() ? "" : ", ") + std::string(g.name);
    return false;
  });
  return out;
}

std::string fp8_gpu_names() {
  std::string out;
  first([&](const GpuSpec& g) {
    if (g.peaks.fp8_flops > 0) out += (out.empty() ? "" : ", ") + std::string(g.name);
    return false;
  });
  return out;
}

std::string sm_default_names() {
  std::string out;
  first([&](const GpuSpec& g) {
    if (g.sm_default) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", g.sm, g.name);
    return false;
  });
  return out;
}

const GpuSpec& add_gpu(const GpuSpec& spec) {
  if (spec.name.empty()) throw UsageError("a GPU model needs a name");
  if (find_gpu(spec.name) != nullptr)
    throw UsageError(fmt::format("GPU model \"{}\" is already in the catalogue", spec.name));
  Added& a = added();
  const std::lock_guard hold(a.mutex);
  GpuSpec g = spec;
  g.name = a.keep(spec.name);
  for (std::string_view& d : g.driver_names) d = d.empty() ? d : a.keep(d);
  g.source = a.keep(spec.source);
  return a.specs.emplace_back(g);
}

}  // namespace meshsim::hardware
