#include "runtime/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_limit.h"
#include "core/thread_group.h"
#include "core/unit_strings.h"

namespace meshsim::runtime {

namespace {

using Clock = std::chrono::steady_clock;

Time elapsed(Clock::time_point a, Clock::time_point b) {
  return Time::ps(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count() * 1000);
}

plan::Calibration calibrate_host(const CalibrateOptions& opts) {
  const int threads =
      opts.threads > 0 ? opts.threads : std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  // The sweep's pair of --max buffers, then the aggregate copy's pairs that add up to --max.
  require_memory(
      4 * static_cast<double>(opts.max_size.count()),
      fmt::format("the host calibration's buffers (twice two of --max {})", human_string(opts.max_size)),
      "give a smaller --max");
  const auto max = static_cast<std::size_t>(opts.max_size.count());
  std::vector<std::byte> a(max, std::byte{1});
  std::vector<std::byte> b(max, std::byte{2});
  std::vector<plan::CopyPoint> pts;
  for (Bytes s : sweep_sizes(opts.min_size, opts.max_size)) {
    Time best = Time::max();
    for (int r = 0; r < opts.repeats; ++r) {
      const auto t0 = Clock::now();
      std::memcpy(b.data(), a.data(), static_cast<std::size_t>(s.count()));
      const auto t1 = Clock::now();
      best = std::min(best, elapsed(t0, t1));
    }
    pts.push_back({s, best});
  }
  plan::Calibration c;
  c.backend = "host";
  c.copy = plan::fit_copy(std::move(pts));
  if (opts.progress)
    opts.progress(fmt::format("memcpy: {} per copy, latency {}", human_string(c.copy->bandwidth),
                              human_string(c.copy->latency)));
  // Aggregate: every thread copies its own max-size pair at once.
  const std::size_t each = std::max<std::size_t>(max / static_cast<std::size_t>(threads), 1);
  std::vector<std::vector<std::byte>> src(static_cast<std::size_t>(threads),
                                          std::vector<std::byte>(each, std::byte{3}));
  std::vector<std::vector<std::byte>> dst(static_cast<std::size_t>(threads), std::vector<std::byte>(each));
  Time best = Time::max();
  for (int r = 0; r < opts.repeats; ++r) {
    const auto t0 = Clock::now();
    ThreadGroup pool("threads for the aggregate copy (--threads)");
    for (std::size_t k = 0; k < static_cast<std::size_t>(threads); ++k)
      pool.start([&, k] { std::memcpy(dst[k].data(), src[k].data(), each); },
                 static_cast<std::size_t>(threads));
    pool.join();
    best = std::min(best, elapsed(t0, Clock::now()));
  }
  const double bytes = static_cast<double>(each) * threads;
  c.copy->aggregate_bandwidth = plan::round_rate(bytes / std::max(best.seconds(), 1e-12));
  if (opts.progress)
    opts.progress(fmt::format("memcpy on {} threads at once: {} in all", threads,
                              human_string(*c.copy->aggregate_bandwidth)));
  c.machine = Json{{"kind", "host"}, {"threads", threads}};
  return c;
}

}  // namespace

std::vector<Bytes> sweep_sizes(Bytes min, Bytes max) {
  std::vector<Bytes> out;
  for (Bytes s = min; s < max; s = s.count() <= (max.count() - 1) / 4 ? s * 4 : max) out.push_back(s);
  out.push_back(max);
  return out;
}

plan::Calibration calibrate(const CalibrateOptions& opts) {
  if (opts.min_size.count() <= 0 || opts.max_size < opts.min_size)
    throw UsageError("calibration sizes: need 0 < min <= max");
  if (opts.repeats < 1) throw UsageError("calibration repeats must be at least 1");
  if (opts.backend == "host") return calibrate_host(opts);
  if (opts.backend == "cuda") return calibrate_cuda(opts);
  if (opts.backend == "nccl") return calibrate_nccl(opts);
  throw UsageError(fmt::format("unknown backend \"{}\" (expected host, cuda or nccl)", opts.backend));
}

}  // namespace meshsim::runtime
