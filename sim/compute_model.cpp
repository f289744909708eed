#include "sim/compute_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "hardware/gpus.h"
#include "sim/kernel/engine.h"
#include "sim/kernel/numeric.h"

namespace meshsim::sim {

using plan::DType;
using plan::DTypeClass;

namespace {
// The compute model of a catalogue entry (hardware/gpu.h): its peaks,
// memory and SMs, every efficiency 1 and no launch overhead.
DeviceModel model_of(const hardware::GpuSpec& g) {
  DeviceModel m;
  m.name = std::string(g.name);
  m.source = "datasheet peak";
  m.fp32_flops = g.peaks.fp32_flops;
  m.fp16_flops = g.peaks.fp16_flops;
  m.fp64_flops = g.peaks.fp64_flops;
  m.int8_ops = g.peaks.int8_ops;
  m.fp8_flops = g.peaks.fp8_flops;
  m.memory_bandwidth = g.memory_bandwidth;
  m.memory_capacity = g.memory;
  m.sms = g.sms;
  return m;
}
}  // namespace

double DeviceModel::peak(DType d) const {
  switch (plan::dtype_class(d)) {
    case DTypeClass::fp32: return fp32_flops;
    case DTypeClass::fp16: return fp16_flops;
    case DTypeClass::fp64: return fp64_flops;
    case DTypeClass::int8: return int8_ops;
  }
  return fp32_flops;
}

Time DeviceModel::kernel_time(double flops, Bytes bytes, DType d) const {
  MESHSIM_ASSERT(flops >= 0 && bytes.count() >= 0, "kernel work is non-negative");
  const double compute_s =
      flops / (peak(d) * compute_efficiency[static_cast<std::size_t>(plan::dtype_class(d))]);
  const double memory_s = static_cast<double>(bytes.count()) / memory_bandwidth.bytes_per_second_f();
  const double s = std::max(compute_s, memory_s) / efficiency;
  return kernel::duration_up(s) + launch_overhead;
}

namespace {
// Tensor-core tile shapes (tm, tn) of cuBLASLt's list.
constexpr std::array<std::array<double, 2>, 6> kTiles{
    {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}};
}  // namespace

Time DeviceModel::kernels_time(const plan::KernelList& k) const {
  // Each kernel's time is within the clock's range; their sum is kept so.
  Time t;
  auto add = [&t](Time d) {
    if (d > kernel::Engine::kClockLimit - t) kernel::Engine::clock_overflow();
    t += d;
  };
  for (const auto& g : k.gemms) add(g.fp8 ? fp8_gemm_time(g) : gemm_time(g.m, g.n, g.k, k.dtype, g.batch));
  for (const auto& a : k.attention) add(attention_time(a, k.dtype));
  for (Bytes bytes : k.memory_bytes) add(kernel_time(0, bytes, k.dtype));
  if (k.host_per_kernel <= Time::zero()) return t;
  return std::max(t, kernel::duration_up(k.host_per_kernel.seconds() * static_cast<double>(k.launches())));
}

Time DeviceModel::attention_time(const plan::KernelList::Attention& a, DType d) const {
  MESHSIM_ASSERT(a.batch > 0 && a.queries > 0 && a.keys > 0 && a.head_dim > 0,
                 "an attention kernel has positive sizes");
  const double fraction =
      attention_efficiency.value_or(compute_efficiency[static_cast<std::size_t>(plan::dtype_class(d))]);
  const double compute_s = a.flops() / (peak(d) * fraction);
  const double memory_s =
      a.elements() * static_cast<double>(plan::dtype_size(d)) / memory_bandwidth.bytes_per_second_f();
  return kernel::duration_up(std::max(compute_s, memory_s) / efficiency) + launch_overhead;
}

void DeviceModel::add_measured_gemm(const plan::GemmPoint& g) {
  const auto it = std::lower_bound(measured_gemms.begin(), measured_gemms.end(), g, plan::gemm_before);
  if (it != measured_gemms.end() && !plan::gemm_before(g, *it))
    *it = g;
  else
    measured_gemms.insert(it, g);
}

const plan::GemmPoint* DeviceModel::measured_gemm(const plan::KernelList::Gemm& g, DType d) const {
  if (measured_gemms.empty()) return nullptr;
  const plan::GemmPoint key{d, g, Time{}};
  const auto it = std::lower_bound(measured_gemms.begin(), measured_gemms.end(), key, plan::gemm_before);
  return it != measured_gemms.end() && !plan::gemm_before(key, *it) ? &*it : nullptr;
}

namespace {
// (larger of m and n, smaller, k, batch): the coordinates of nearness.
std::array<double, 4> coordinates(const plan::KernelList::Gemm& g) {
  return {std::max(g.m, g.n), std::min(g.m, g.n), g.k, g.batch};
}
}  // namespace

const plan::GemmPoint* DeviceModel::nearest_measured_gemm(const plan::KernelList::Gemm& g, DType d) const {
  const std::array<double, 4> q = coordinates(g);
  const plan::GemmPoint* best = nullptr;
  double best_gap = std::numeric_limits<double>::infinity();
  // The points are sorted by dtype first: those of `d` are one run.
  auto it = std::lower_bound(measured_gemms.begin(), measured_gemms.end(), d,
                             [](const plan::GemmPoint& p, DType x) { return p.dtype < x; });
  for (; it != measured_gemms.end() && it->dtype == d; ++it) {
    const std::array<double, 4> p = coordinates(it->shape);
    // Within a factor 4 in each of the four (batch first: it differs most often).
    auto near = [&](std::size_t x) { return q[x] <= 4 * p[x] && p[x] <= 4 * q[x]; };
    if (!near(3) || !near(2) || !near(1) || !near(0)) continue;
    double gap = 0;  // squared distance in log2
    for (std::size_t x = 0; x < 4; ++x) gap += std::pow(std::log2(q[x] / p[x]), 2);
    if (gap < best_gap) {
      best_gap = gap;
      best = &*it;
    }
  }
  return best;
}

Time DeviceModel::gemm_time(double m, double n, double k, DType d, double batch) const {
  MESHSIM_ASSERT(m > 0 && n > 0 && k > 0 && batch > 0, "a GEMM has positive sizes");
  if (measured_gemms.empty()) return modelled_gemm_time(m, n, k, d, batch);
  if (const plan::GemmPoint* p = measured_gemm({m, n, k, batch}, d)) return p->time;
  const Time t = modelled_gemm_time(m, n, k, d, batch);
  const plan::GemmPoint* p = nearest_measured_gemm({m, n, k, batch}, d);
  if (!p) return t;
  const Time at_p = modelled_gemm_time(p->shape.m, p->shape.n, p->shape.k, d, p->shape.batch);
  return kernel::duration_up(t.seconds() * (p->time.seconds() / at_p.seconds()));
}

Time DeviceModel::modelled_gemm_time(double m, double n, double k, DType d, double batch) const {
  const double elem = static_cast<double>(plan::dtype_size(d));
  const double rate = peak(d) * compute_efficiency[static_cast<std::size_t>(plan::dtype_class(d))];
  return tiled_time({m, n, k, batch}, rate, elem);
}

Time DeviceModel::fp8_gemm_time(const plan::KernelList::Gemm& g) const {
  if (fp8_flops <= 0)
    throw UsageError(fmt::format("an FP8 GEMM on the {}, which has no FP8 tensor cores", name));
  return tiled_time(g, fp8_flops * fp8_fraction(), 1);
}

double DeviceModel::fp8_fraction() const {
  return fp8_efficiency.value_or(compute_efficiency[static_cast<std::size_t>(DTypeClass::fp16)]);
}

Time DeviceModel::tiled_time(const plan::KernelList::Gemm& g, double rate, double elem) const {
  const double m = g.m, n = g.n, k = g.k, batch = g.batch;
  MESHSIM_ASSERT(m > 0 && n > 0 && k > 0 && batch > 0, "a GEMM has positive sizes");
  const double memory_s = (m * k + k * n + m * n) * batch * elem / memory_bandwidth.bytes_per_second_f();
  if (sms <= 0)
    return kernel::duration_up(std::max(2 * m * n * k * batch / rate, memory_s) / efficiency) +
           launch_overhead;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [tm, tn] : kTiles) {
    const double tiles = std::ceil(m / tm) * std::ceil(n / tn) * batch;
    const double waves = std::ceil(tiles / sms);
    best = std::min(best, std::max(waves * 2 * tm * tn * k / (rate / sms), memory_s));
  }
  return kernel::duration_up(best / efficiency) + launch_overhead;
}

const DeviceModel* find_device_model(std::string_view gpu_model, const std::vector<DeviceModel>& overrides) {
  for (const DeviceModel& m : overrides)
    if (m.name == gpu_model) return &m;
  return find_device_model(gpu_model);
}

const DeviceModel* find_device_model(std::string_view gpu_model) {
  const hardware::GpuSpec* g = hardware::find_gpu(gpu_model);
  if (g == nullptr || !g->modelled()) return nullptr;
  // One model per catalogue entry, made on first use; a deque never moves them.
  static std::mutex mutex;
  static std::deque<DeviceModel> made;
  const std::lock_guard hold(mutex);
  for (const DeviceModel& m : made)
    if (m.name == g->name) return &m;
  return &made.emplace_back(model_of(*g));
}

std::string apply_compute_efficiency(const topology::Topology& topo, std::vector<DeviceModel>& models,
                                     std::optional<double> efficiency, plan::DType dtype) {
  std::vector<std::string> parts;
  bool at_peak = false;
  for (const std::string& name : topo.gpu_models()) {
    const DeviceModel* found = find_device_model(name, models);
    if (!found) continue;  // build_pipeline names the GPU without a model
    DeviceModel m = *found;
    if (efficiency) {  // the GEMMs' and fused attention's alike, measured GEMMs no longer correcting them
      m.compute_efficiency.fill(*efficiency);
      m.attention_efficiency.reset();
      m.fp8_efficiency.reset();
      m.measured_gemms.clear();
      m.source = fmt::format("efficiency {:g} given in place of the {}", *efficiency, m.source);
    }
    const double eff = m.compute_efficiency[static_cast<std::size_t>(plan::dtype_class(dtype))];
    at_peak = at_peak || eff >= 1.0;
    parts.push_back(fmt::format("{} at {:.0f} % of its {} peak ({:.0f} TFLOP/s; {})", name, 100 * eff,
                                plan::to_string(dtype), m.peak(dtype) * eff / 1e12, m.source));
    auto slot =
        std::find_if(models.begin(), models.end(), [&](const DeviceModel& d) { return d.name == name; });
    if (slot != models.end()) {
      *slot = m;
    } else {
      models.push_back(m);
    }
  }
  std::string line = fmt::format("{}", fmt::join(parts, "; "));
  if (at_peak) line += ": an optimistic bound, no GPU reaches its datasheet peak";
  return line;
}

std::string fp8_compute_line(const topology::Topology& topo, const std::vector<DeviceModel>& models) {
  std::vector<std::string> parts;
  for (const std::string& name : topo.gpu_models()) {
    const DeviceModel* m = find_device_model(name, models);
    if (m == nullptr || m->fp8_flops <= 0) continue;
    const double eff = m->fp8_fraction();
    parts.push_back(fmt::format("{} at {:.0f} % of its FP8 peak ({:.0f} TFLOP/s; {})", name, 100 * eff,
                                m->fp8_flops * eff / 1e12,
                                m->fp8_efficiency ? m->source : "the f16 GEMMs' fraction, " + m->source));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

Time eager_host_per_kernel(const topology::Topology& topo, const std::vector<DeviceModel>& models) {
  Time most;
  for (const std::string& name : topo.gpu_models()) {
    const DeviceModel* m = find_device_model(name, models);
    if (m == nullptr || m->eager_host_per_kernel <= Time::zero())
      throw UsageError(
          fmt::format("the {}'s compute model ({}) has no figure for an eager framework's host "
                      "work per kernel (a device profile's host_per_kernel); give a duration",
                      name, m == nullptr ? "none" : m->source));
    most = std::max(most, m->eager_host_per_kernel);
  }
  return most;
}

}  // namespace meshsim::sim
