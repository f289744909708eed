#include "pipeline/terapipe.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_limit.h"

namespace meshsim::pipeline {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Memory the dynamic program's tables may take (docs/limits.md).
constexpr double kMaxTableBytes = 2e9;

// Slice times of one microbatch size, by (end unit i, length k): index
// i(i − 1)/2 + k − 1 for 1 ≤ k ≤ i ≤ U.
struct Table {
  std::vector<double> t;
  bool monotone = true;  // t grows with k for every end i: the DP may stop at the first k over the cap
  [[nodiscard]] static std::size_t index(int i, int k) {
    return static_cast<std::size_t>(i) * static_cast<std::size_t>(i - 1) / 2 + static_cast<std::size_t>(k) -
           1;
  }
  [[nodiscard]] double at(int i, int k) const { return t[index(i, k)]; }
};

Table make_table(int units, int granularity, int b, const SliceCostFn& cost) {
  Table tb;
  tb.t.resize(static_cast<std::size_t>(units) * static_cast<std::size_t>(units + 1) / 2);
  for (int i = 1; i <= units; ++i) {
    double prev = -kInf;
    for (int k = 1; k <= i; ++k) {
      const double v = cost(k * granularity, (i - k) * granularity, b);
      tb.t[Table::index(i, k)] = v;
      if (v < prev) tb.monotone = false;
      prev = v;
    }
  }
  return tb;
}

void check_sizes(int tokens, int batch, int K, int granularity) {
  if (granularity < 1 || tokens < granularity || tokens % granularity != 0)
    throw UsageError(
        fmt::format("the sequence ({} tokens) is not a multiple of the granularity {}", tokens, granularity));
  if (batch < 1 || K < 1) throw UsageError("the batch and the number of stages must be at least 1");
}

// The microbatch limit as a size bound: 0 (none) is the batch.
int microbatch_bound(int max_microbatch, int batch) {
  if (max_microbatch < 0) throw UsageError("the microbatch limit must not be negative");
  return max_microbatch == 0 ? batch : std::min(max_microbatch, batch);
}

// Σ and max of a slicing's slice times.
std::pair<double, double> sum_and_max(const TokenSlicing& s, const SliceCostFn& cost) {
  double sum = 0;
  double worst = 0;
  for (std::size_t j = 0; j < s.microbatches.size(); ++j) {
    int ctx = 0;
    for (int len : s.slices[j]) {
      const double t = cost(len, ctx, s.microbatches[j]);
      sum += t;
      worst = std::max(worst, t);
      ctx += len;
    }
  }
  return {sum, worst};
}

// Sets the slicing's time and largest slice from the cost.
void score(TokenSlicing& s, int K, const SliceCostFn& cost) {
  const auto [sum, worst] = sum_and_max(s, cost);
  s.time = sum + (K - 1) * worst;
  s.max_slice = worst;
}

// f(x) = min over the first microbatch's size j ≤ max_j of f(x − j) + sl[j],
// f(0) = 0; returns f(batch), and in `pick` (if given) the j chosen for each x.
double knapsack(const std::vector<double>& sl, int batch, int max_j, std::vector<double>& f,
                std::vector<int>* pick) {
  f.assign(static_cast<std::size_t>(batch) + 1, kInf);
  f[0] = 0;
  if (pick) pick->assign(static_cast<std::size_t>(batch) + 1, 0);
  for (int x = 1; x <= batch; ++x)
    for (int j = 1; j <= std::min(x, max_j); ++j) {
      const double v = f[static_cast<std::size_t>(x - j)] + sl[static_cast<std::size_t>(j)];
      if (v < f[static_cast<std::size_t>(x)]) {
        f[static_cast<std::size_t>(x)] = v;
        if (pick) (*pick)[static_cast<std::size_t>(x)] = j;
      }
    }
  return f[static_cast<std::size_t>(batch)];
}

// S(U) under `cap`; `choice[i]` the last slice's length ending at unit i.
double token_dp(const Table& tb, int units, double cap, std::vector<double>& s, std::vector<int>* choice) {
  s.assign(static_cast<std::size_t>(units) + 1, kInf);
  s[0] = 0;
  if (choice) choice->assign(static_cast<std::size_t>(units) + 1, 0);
  for (int i = 1; i <= units; ++i) {
    double best = kInf;
    int best_k = 0;
    for (int k = 1; k <= i; ++k) {
      const double t = tb.at(i, k);
      if (t > cap) {
        if (tb.monotone) break;
        continue;
      }
      const double v = s[static_cast<std::size_t>(i - k)] + t;
      if (v < best) {
        best = v;
        best_k = k;
      }
    }
    s[static_cast<std::size_t>(i)] = best;
    if (choice) (*choice)[static_cast<std::size_t>(i)] = best_k;
  }
  return s[static_cast<std::size_t>(units)];
}

struct CapSearch {
  double cap = 0;
  int caps_tried = 0;
};

// The slice times at or above `floor`, each once, in increasing order: the
// caps worth trying (between two of them no table changes).
std::vector<double> distinct_caps(const std::vector<Table>& tables, double floor) {
  std::vector<double> caps;
  for (const Table& tb : tables)
    for (double v : tb.t)
      if (v >= floor) caps.push_back(v);
  std::sort(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  return caps;
}

// The cap t_max minimising T(t_max) = knapsack(S_b under t_max) +
// (K − 1)·t_max, the smallest on ties, by branch and bound over the
// distinct caps. S_b under a cap only falls as the cap grows (the minimum
// over more slices), so over caps [c_lo, c_hi] T is at least
// knapsack(S_b under c_hi) + (K − 1)·c_lo, and if the knapsack is the same
// at both ends the interval's best is c_lo. An interval is dropped when
// that bound cannot beat the best found, or when c_lo + (K − 1)·c_lo or the
// uncapped sum plus (K − 1)·c_lo cannot: a slicing whose largest slice m
// is at least c_lo sums to at least m, and one whose largest slice is
// below c_lo is also a slicing under the smaller cap m, at no more time.
// Floating-point addition and min are monotone, so the bounds hold as
// computed, and the result is the exhaustive search's to the bit.
CapSearch search_caps(const std::vector<Table>& tables, int units, int batch, int K,
                      const CapProgress& progress) {
  const int bmax = static_cast<int>(tables.size());
  std::vector<std::vector<double>> s(static_cast<std::size_t>(bmax));
  std::vector<double> sl(static_cast<std::size_t>(batch) + 1);
  std::vector<double> f(static_cast<std::size_t>(batch) + 1);
  CapSearch out;
  // The knapsack of the tables' best sums under `cap`, a cap tried.
  auto solve = [&](double cap) {
    ++out.caps_tried;
    for (int b = 1; b <= bmax; ++b)
      sl[static_cast<std::size_t>(b)] = token_dp(tables[static_cast<std::size_t>(b) - 1], units, cap,
                                                 s[static_cast<std::size_t>(b) - 1], nullptr);
    return knapsack(sl, batch, bmax, f, nullptr);
  };
  const double uncapped = solve(kInf);
  out.caps_tried = 0;  // no cap is the bound, not a cap tried
  // No slicing is feasible under a cap below the one-unit slice that ends
  // the sequence.
  const std::vector<double> caps = distinct_caps(tables, tables[0].at(units, 1));
  double best = kInf;
  auto beats = [&](double t, double cap) { return t < best || (t == best && cap < out.cap); };
  auto offer = [&](double t, double cap) {
    if (beats(t, cap)) {
      best = t;
      out.cap = cap;
    }
  };
  // Intervals [lo, hi) of `caps` still to search, the lowest last (searched first).
  std::vector<std::pair<std::size_t, std::size_t>> todo{{0, caps.size()}};
  std::size_t settled = 0;  // caps decided, for the progress
  std::size_t told = SIZE_MAX;
  auto tell = [&](std::size_t n) {
    settled += n;
    if (!progress) return;
    if (const std::size_t k = settled * 1000 / caps.size(); k != told) {
      told = k;
      progress(settled, caps.size());
    }
  };
  while (!todo.empty()) {
    const auto [lo, hi] = todo.back();
    todo.pop_back();
    const double c_lo = caps[lo];
    const double c_hi = caps[hi - 1];
    const double slope = (K - 1) * c_lo;
    // c_lo + slope, not K·c_lo: it is what a slicing whose largest slice is
    // c_lo at least costs as computed (the rounding of K·c_lo may be an ulp
    // above it).
    if (!beats(c_lo + slope, c_lo) || !beats(uncapped + slope, c_lo)) {
      tell(hi - lo);
      continue;
    }
    const double q_lo = solve(c_lo);
    offer(q_lo + slope, c_lo);
    if (hi - lo == 1) {
      tell(1);
      continue;
    }
    const double q_hi = solve(c_hi);
    offer(q_hi + (K - 1) * c_hi, c_hi);
    if (q_hi == q_lo || !beats(q_hi + slope, c_lo)) {
      tell(hi - lo);  // the best of the interval is c_lo's, offered
      continue;
    }
    tell(2);  // both ends are solved: the caps between them are left
    if (hi - lo == 2) continue;
    const std::size_t mid = lo + 1 + (hi - lo - 2) / 2;  // (lo, mid) and [mid, hi - 1), neither empty
    todo.emplace_back(mid, hi - 1);
    if (lo + 1 < mid) todo.emplace_back(lo + 1, mid);
  }
  MESHSIM_ASSERT(best < kInf, "the token DP found no slicing");
  if (progress) progress(caps.size(), caps.size());
  return out;
}

}  // namespace

double slicing_time(const TokenSlicing& s, int K, const SliceCostFn& cost) {
  const auto [sum, worst] = sum_and_max(s, cost);
  return sum + (K - 1) * worst;
}

void check_terapipe_dp(int tokens, int batch, int K, int granularity, int max_microbatch) {
  check_sizes(tokens, batch, K, granularity);
  const int bmax = microbatch_bound(max_microbatch, batch);
  const int units = tokens / granularity;
  const double table_bytes = 2.0 * bmax * (static_cast<double>(units) * (units + 1) / 2) * sizeof(double);
  if (table_bytes > kMaxTableBytes)
    throw UsageError(fmt::format(
        "the slicing tables would take {:.1f} GB ({} units of {} tokens, microbatches of 1 to {} sequences); "
        "the limit is {:.0f} GB: give a coarser --granularity or a smaller batch",
        table_bytes / 1e9, units, granularity, bmax, kMaxTableBytes / 1e9));
  // Per sequence of the batch: the knapsack's rows (two doubles, a choice
  // list and a pick), and uniform slicing's microbatch lists at their
  // largest (microbatches of one sequence in `units` slices, the best and
  // the one being scored).
  const double per_sequence = 64 + 2 * (32 + 4.0 * units);
  require_memory(table_bytes + per_sequence * batch,
                 fmt::format("slicing a batch of {} sequences of {} tokens", batch, tokens),
                 "give a smaller batch or a coarser --granularity");
}

TokenSlicing terapipe_dp(int tokens, int batch, int K, const SliceCostFn& cost, int granularity,
                         int max_microbatch, const CapProgress& progress) {
  check_terapipe_dp(tokens, batch, K, granularity, max_microbatch);  // before allocating
  const int bmax = microbatch_bound(max_microbatch, batch);
  const int units = tokens / granularity;
  std::vector<Table> tables;
  for (int b = 1; b <= bmax; ++b) tables.push_back(make_table(units, granularity, b, cost));
  const CapSearch found = search_caps(tables, units, batch, K, progress);
  const double best_cap = found.cap;
  TokenSlicing out;
  out.caps_tried = found.caps_tried;
  std::vector<double> s;
  std::vector<double> sl(static_cast<std::size_t>(batch) + 1);
  std::vector<double> f(static_cast<std::size_t>(batch) + 1);
  // Rebuild the best: the knapsack's split, then each size's slices.
  std::vector<std::vector<int>> choice(static_cast<std::size_t>(batch) + 1);
  for (int b = 1; b <= bmax; ++b)
    sl[static_cast<std::size_t>(b)] = token_dp(tables[static_cast<std::size_t>(b) - 1], units, best_cap, s,
                                               &choice[static_cast<std::size_t>(b)]);
  std::vector<int> pick;
  knapsack(sl, batch, bmax, f, &pick);
  for (int x = batch; x > 0; x -= pick[static_cast<std::size_t>(x)]) {
    const int b = pick[static_cast<std::size_t>(x)];
    std::vector<int> lens;
    for (int i = units; i > 0; i -= choice[static_cast<std::size_t>(b)][static_cast<std::size_t>(i)])
      lens.push_back(choice[static_cast<std::size_t>(b)][static_cast<std::size_t>(i)] * granularity);
    std::reverse(lens.begin(), lens.end());
    out.microbatches.push_back(b);
    out.slices.push_back(std::move(lens));
  }
  score(out, K, cost);
  return out;
}

TokenSlicing uniform_slicing(int tokens, int batch, int K, const SliceCostFn& cost, int max_slices,
                             int granularity, int max_microbatch) {
  check_sizes(tokens, batch, K, granularity);
  const int bmax = microbatch_bound(max_microbatch, batch);
  const int units = tokens / granularity;
  TokenSlicing best;
  best.time = kInf;
  for (int b = 1; b <= bmax; ++b) {
    if (batch % b != 0) continue;
    for (int n = 1; n <= std::min(units, max_slices); ++n) {
      if (units % n != 0) continue;
      const auto count = static_cast<std::size_t>(batch / b);
      TokenSlicing s{
          std::vector<int>(count, b),
          std::vector<std::vector<int>>(count, std::vector<int>(static_cast<std::size_t>(n), tokens / n)), 0,
          0, 0};
      score(s, K, cost);
      if (s.time < best.time) best = std::move(s);
    }
  }
  return best;
}

TokenSlicing fixed_uniform_slicing(int tokens, int batch, int K, const SliceCostFn& cost, int slices,
                                   int granularity) {
  check_sizes(tokens, batch, K, granularity);
  const int units = tokens / granularity;
  if (slices < 1 || units % slices != 0)
    throw UsageError(
        fmt::format("{} slices do not cut a sequence of {} tokens into equal slices of whole "
                    "{}-token units",
                    slices, tokens, granularity));
  const auto count = static_cast<std::size_t>(batch);
  TokenSlicing s{std::vector<int>(count, 1),
                 std::vector<std::vector<int>>(
                     count, std::vector<int>(static_cast<std::size_t>(slices), tokens / slices)),
                 0, 0, 0};
  score(s, K, cost);
  return s;
}

}  // namespace meshsim::pipeline
