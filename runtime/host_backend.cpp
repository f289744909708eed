#include "runtime/host_backend.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <queue>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/thread_group.h"
#include "core/unit_strings.h"
#include "runtime/executor.h"
#include "runtime/values.h"
#include "runtime/work.h"

namespace meshsim::runtime {

namespace {

using Clock = std::chrono::steady_clock;

Time since(Clock::time_point t0) {
  return Time::ps(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count() * 1000);
}

class HostBackend final : public Backend {
 public:
  explicit HostBackend(HostBackendOptions opts) : opts_(std::move(opts)) {
    if (opts_.threads <= 0)
      opts_.threads = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  }

  [[nodiscard]] std::string name() const override { return "host"; }
  [[nodiscard]] std::string describe() const override {
    return fmt::format("{} plan devices as host memory regions, {} worker threads", work_.devices.size(),
                       opts_.threads);
  }

  void load(const plan::Plan& /*plan*/, const Schedule& /*schedule*/, const PlanWork& work,
            const std::vector<std::vector<std::byte>>& images) override {
    work_ = work;
    mem_ = images;
    scratch_.clear();
    for (std::int64_t s : work_.scratch_bytes)
      scratch_.emplace_back(static_cast<std::size_t>(s), std::byte{0});
  }

  [[nodiscard]] std::vector<TaskSpan> run(const plan::Plan& plan, const Schedule& schedule) override {
    MESHSIM_ASSERT(work_.tasks.size() == plan.tasks.size(), "run() before load()");
    const std::size_t n = plan.tasks.size();
    refuse_long_compute(plan);
    std::vector<TaskSpan> spans(n);
    std::vector<std::size_t> waiting(n);
    for (std::size_t i = 0; i < n; ++i) waiting[i] = schedule.preds[i].size();
    std::vector<std::size_t> rank(n);  // position in the schedule order: ready tasks go in that order
    for (std::size_t k = 0; k < n; ++k) rank[schedule.order[k]] = k;
    auto later = [&](std::size_t a, std::size_t b) { return rank[a] > rank[b]; };
    // Room for every task up front: a push under the workers' lock never
    // allocates, so no worker can fail outside its task and leave the
    // others waiting.
    std::vector<std::size_t> room;
    room.reserve(n);
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> ready(later, std::move(room));
    for (std::size_t i = 0; i < n; ++i)
      if (waiting[i] == 0) ready.push(i);
    std::mutex mu;
    std::condition_variable cv;
    std::size_t done = 0;
    std::exception_ptr failure;
    const Clock::time_point t0 = Clock::now();

    auto worker = [&] {
      std::unique_lock lock(mu);
      for (;;) {
        cv.wait(lock, [&] { return !ready.empty() || done == n || failure; });
        if (done == n || failure) return;
        const std::size_t i = ready.top();
        ready.pop();
        lock.unlock();
        TaskSpan span;
        span.start = since(t0);
        try {
          execute(plan, plan.tasks[i], work_.tasks[i]);
        } catch (...) {
          lock.lock();
          failure = std::current_exception();
          cv.notify_all();
          return;
        }
        span.end = since(t0);
        lock.lock();
        spans[i] = span;
        ++done;
        for (std::size_t j : schedule.succs[i])
          if (--waiting[j] == 0) ready.push(j);
        cv.notify_all();
      }
    };
    ThreadGroup pool("host backend worker threads (--threads)");
    const auto workers =
        std::min<std::size_t>(static_cast<std::size_t>(opts_.threads), std::max<std::size_t>(n, 1));
    for (std::size_t w = 0; w < workers; ++w) pool.start(worker, workers);
    pool.join();
    if (failure) std::rethrow_exception(failure);
    return spans;
  }

  [[nodiscard]] std::vector<std::vector<std::byte>> read_back(const plan::Plan& /*plan*/) override {
    return mem_;
  }

  // Its own copy of the buffers beside the caller's images (or the
  // read-back), and the scratch areas of payload-less transfers.
  [[nodiscard]] double host_bytes(const plan::Plan& plan, const PlanWork& work) const override {
    double scratch = 0;
    for (std::int64_t b : work.scratch_bytes) scratch += static_cast<double>(b);
    return 2 * static_cast<double>(buffer_bytes(plan)) + scratch;
  }

 private:
  // Host compute is a sleep: one past the timeout would hold the run (a
  // "100000s" task, 28 hours) with nothing to show.
  void refuse_long_compute(const plan::Plan& plan) const {
    for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
      if (!work_.tasks[i].compute) continue;
      const Time t = compute_time_of(opts_.compute_time, plan, plan.tasks[i]);
      if (t > opts_.timeout)
        throw UsageError(
            fmt::format("compute task \"{}\" would take {} on the host backend, longer than the "
                        "timeout of {} (--timeout)",
                        plan.tasks[i].id, human_string(t), human_string(opts_.timeout)));
    }
  }

  void execute(const plan::Plan& plan, const plan::Task& task, const TaskWork& w) {
    if (w.compute) {
      const Time t = compute_time_of(opts_.compute_time, plan, task);
      if (t > Time{}) {
        const auto until = Clock::now() + std::chrono::nanoseconds(t.count_ps() / 1000);
        std::this_thread::sleep_until(until);
      }
      return;
    }
    for (const BufferCopy& c : w.copies) {
      std::byte* dst = mem_[c.dst_buffer].data();
      const std::byte* src = mem_[c.src_buffer].data();
      const auto len = static_cast<std::size_t>(c.copy.row_bytes);
      c.copy.for_each_row([&](std::int64_t s, std::int64_t d) { std::memmove(dst + d, src + s, len); });
    }
    for (const Reduction& r : w.reductions) reduce(r);
    for (const ScratchCopy& c : w.scratch)
      std::memcpy(scratch_[c.dst_device].data(), scratch_[c.src_device].data(),
                  static_cast<std::size_t>(c.bytes));
  }

  // Sums the sources element by element in double (exact for the test
  // values; one rounding into the dtype for others), then writes the sums.
  void reduce(const Reduction& r) {
    const auto e = static_cast<std::size_t>(plan::dtype_size(r.dtype));
    std::vector<double> acc(static_cast<std::size_t>(r.sources.front().copy.bytes()) / e, 0.0);
    for (const BufferCopy& c : r.sources) {
      const std::span<const std::byte> src(mem_[c.src_buffer]);
      std::size_t k = 0;
      c.copy.for_each_row([&](std::int64_t s, std::int64_t /*d*/) {
        for (std::int64_t b = 0; b < c.copy.row_bytes; b += static_cast<std::int64_t>(e))
          acc[k++] += decode_value(r.dtype, src.subspan(static_cast<std::size_t>(s + b), e));
      });
    }
    const std::span<std::byte> dst(mem_[r.dst_buffer]);
    const StridedCopy& out = r.sources.front().copy;
    std::size_t k = 0;
    out.for_each_row([&](std::int64_t /*s*/, std::int64_t d) {
      for (std::int64_t b = 0; b < out.row_bytes; b += static_cast<std::int64_t>(e))
        encode_value(r.dtype, acc[k++], dst.subspan(static_cast<std::size_t>(d + b), e));
    });
  }

  HostBackendOptions opts_;
  PlanWork work_;
  std::vector<std::vector<std::byte>> mem_;
  std::vector<std::vector<std::byte>> scratch_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& opts) {
  return std::make_unique<HostBackend>(opts);
}

Verification verify_on_host(const plan::Plan& plan) {
  HostBackend backend(HostBackendOptions{.threads = 2, .compute_time = {}});
  return run_plan(plan, backend).check;
}

}  // namespace meshsim::runtime
