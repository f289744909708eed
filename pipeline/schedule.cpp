#include "pipeline/schedule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::pipeline {

namespace {

// Megatron's interleaved order: unit k of a device is microbatch
// group·n + k mod n of chunk (k / n) mod v, in groups of n·v units.
PipelineOp interleaved_unit(Pass p, int k, int n, int v) {
  const int group = k / (n * v);
  const int within = k % (n * v);
  const int chunk = within / n;
  return {p, group * n + within % n, p == Pass::forward ? chunk : v - 1 - chunk};
}

}  // namespace

int warmup_forwards(model::Schedule s, int n, int m, int v, int i) {
  switch (s) {
    case model::Schedule::gpipe: return m;
    case model::Schedule::one_f_one_b:
    case model::Schedule::zb_h1: return std::min(m, n - i - 1);
    case model::Schedule::eager_1f1b: return std::min(m, 2 * (n - i) - 1);
    case model::Schedule::interleaved_1f1b:
      // Megatron runs every forward first when there are only n microbatches.
      return m == n ? v * m : std::min(v * m, 2 * (n - i - 1) + (v - 1) * n);
  }
  return m;
}

std::vector<std::vector<PipelineOp>> make_schedule(model::Schedule s, int n, int m, int v) {
  if (n < 1 || m < 1 || v < 1)
    throw UsageError("a pipeline needs at least 1 stage, microbatch and virtual stage");
  if (v > 1 && s != model::Schedule::interleaved_1f1b)
    throw UsageError(
        fmt::format("{} has one chunk per device; virtual stages need interleaved-1f1b", to_string(s)));
  if (s == model::Schedule::interleaved_1f1b && m % n != 0)
    throw UsageError(
        fmt::format("interleaved-1f1b needs the microbatch count ({}) to be a multiple of the "
                    "stage count ({})",
                    m, n));
  std::vector<std::vector<PipelineOp>> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto& ops = out[static_cast<std::size_t>(i)];
    const int units = v * m;
    auto fwd = [&](int k) {
      return s == model::Schedule::interleaved_1f1b ? interleaved_unit(Pass::forward, k, n, v)
                                                    : PipelineOp{Pass::forward, k, 0};
    };
    auto bwd = [&](int k) {
      return s == model::Schedule::interleaved_1f1b ? interleaved_unit(Pass::backward, k, n, v)
                                                    : PipelineOp{Pass::backward, k, 0};
    };
    const int w = warmup_forwards(s, n, m, v, i);
    for (int k = 0; k < w; ++k) ops.push_back(fwd(k));
    const int steady = units - w;
    for (int k = 0; k < steady; ++k) {
      if (s == model::Schedule::eager_1f1b) {
        ops.push_back(bwd(k));
        ops.push_back(fwd(w + k));
      } else {
        ops.push_back(fwd(w + k));
        ops.push_back(bwd(k));
      }
    }
    for (int k = steady; k < units; ++k) ops.push_back(bwd(k));
    if (s == model::Schedule::zb_h1) {
      // Split each backward into B and W; defer W by up to n−i−1 slots.
      const auto delay = static_cast<std::size_t>(i);
      std::vector<PipelineOp> split;
      std::deque<PipelineOp> pending;
      for (const PipelineOp& op : ops) {
        split.push_back(op);
        if (op.pass != Pass::backward) continue;
        pending.push_back({Pass::weight, op.microbatch, op.chunk});
        if (pending.size() > delay) {
          split.push_back(pending.front());
          pending.pop_front();
        }
      }
      split.insert(split.end(), pending.begin(), pending.end());
      ops = std::move(split);
    }
  }
  return out;
}

ScheduleTimeline timeline(const std::vector<std::vector<PipelineOp>>& ops, int n, int v,
                          const std::vector<PassTimes>& times, double transfer) {
  const int stages = n * v;
  MESHSIM_ASSERT(static_cast<int>(ops.size()) == n, "one op list per device");
  MESHSIM_ASSERT(static_cast<int>(times.size()) == stages, "pass times per virtual stage");
  int m = 0;
  for (const auto& dev : ops)
    for (const auto& op : dev) m = std::max(m, op.microbatch + 1);
  constexpr double kNotYet = std::numeric_limits<double>::quiet_NaN();
  // end[pass][stage][microbatch]
  std::vector<std::vector<std::vector<double>>> end(
      3, std::vector<std::vector<double>>(static_cast<std::size_t>(stages),
                                          std::vector<double>(static_cast<std::size_t>(m), kNotYet)));
  auto end_of = [&](Pass p, int s, int mb) -> double& {
    return end[static_cast<std::size_t>(p)][static_cast<std::size_t>(s)][static_cast<std::size_t>(mb)];
  };
  ScheduleTimeline tl;
  tl.ops.resize(ops.size());
  for (std::size_t d = 0; d < ops.size(); ++d) tl.ops[d].resize(ops[d].size());
  std::vector<std::size_t> next(ops.size(), 0);
  std::vector<double> free_at(ops.size(), 0.0);
  std::size_t left = 0;
  for (const auto& dev : ops) left += dev.size();
  while (left > 0) {
    bool progress = false;
    for (std::size_t d = 0; d < ops.size(); ++d) {
      while (next[d] < ops[d].size()) {
        const PipelineOp& op = ops[d][next[d]];
        const int s = op.chunk * n + static_cast<int>(d);
        double ready = free_at[d];
        auto need = [&](Pass p, int stage, double delay) {
          const double e = end_of(p, stage, op.microbatch);
          if (std::isnan(e)) return false;
          ready = std::max(ready, e + delay);
          return true;
        };
        bool ok = true;
        switch (op.pass) {
          case Pass::forward: ok = s == 0 || need(Pass::forward, s - 1, transfer); break;
          case Pass::backward:
            ok = need(Pass::forward, s, 0) && (s == stages - 1 || need(Pass::backward, s + 1, transfer));
            break;
          case Pass::weight: ok = need(Pass::backward, s, 0); break;
        }
        if (!ok) break;
        const PassTimes& t = times[static_cast<std::size_t>(s)];
        const double dur = op.pass == Pass::forward    ? t.forward
                           : op.pass == Pass::backward ? t.backward
                                                       : t.weight;
        tl.ops[d][next[d]] = {ready, ready + dur};
        end_of(op.pass, s, op.microbatch) = ready + dur;
        free_at[d] = ready + dur;
        ++next[d];
        --left;
        progress = true;
      }
    }
    MESHSIM_ASSERT(progress, "the pipeline schedule deadlocks");
  }
  double busy_ratio_sum = 0;
  for (std::size_t d = 0; d < ops.size(); ++d) {
    bool has_w = false;
    for (const auto& op : ops[d]) has_w = has_w || op.pass == Pass::weight;
    tl.makespan = std::max(tl.makespan, free_at[d]);
    // Activations are held from F until the pass that last needs them: W
    // when the backward is split, else B.
    int held = 0;
    int peak = 0;
    for (const auto& op : ops[d]) {
      if (op.pass == Pass::forward) peak = std::max(peak, ++held);
      if (op.pass == (has_w ? Pass::weight : Pass::backward)) --held;
    }
    tl.peak_in_flight.push_back(peak);
  }
  for (std::size_t d = 0; d < ops.size(); ++d) {
    double busy = 0;
    for (const auto& t : tl.ops[d]) busy += t.end - t.start;
    busy_ratio_sum += busy > 0 ? (tl.makespan - busy) / busy : 0;
  }
  tl.bubble = ops.empty() ? 0 : busy_ratio_sum / static_cast<double>(ops.size());
  return tl;
}

}  // namespace meshsim::pipeline
