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

// Every slice of every table, as (table, index) packed in one integer,
// ordered by slice time: the caps in increasing order, each as often as a
// slice takes it.
std::vector<std::uint64_t> slices_by_time(const std::vector<Table>& tables) {
  std::vector<std::uint64_t> order;
  const std::uint64_t per = tables[0].t.size();
  order.reserve(per * tables.size());
  for (std::uint64_t g = 0; g < per * tables.size(); ++g) order.push_back(g);
  std::sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) {
    return tables[a / per].t[a % per] < tables[b / per].t[b % per];
  });
  return order;
}

// The (end unit i, length k) of a table index (the inverse of Table::index).
std::pair<int, int> end_and_length(std::size_t idx) {
  auto i = static_cast<std::size_t>((1 + std::sqrt(1 + 8 * static_cast<double>(idx))) / 2);
  while (i * (i - 1) / 2 > idx) --i;
  while ((i + 1) * i / 2 <= idx) ++i;
  return {static_cast<int>(i), static_cast<int>(idx - i * (i - 1) / 2 + 1)};
}

struct CapSearch {
  double cap = 0;
  int caps_tried = 0;
};

// Marks the tables whose S a cap's newly allowed slices may shorten. A
// slice (i, k) can only shorten S(i), given the S before it (S at shorter
// ends cannot change before S(i) does), so if none beats S(i) the table's
// S is unchanged. Returns the end of the cap's slices in `order`.
std::size_t mark_changed(const std::vector<Table>& tables, const std::vector<std::uint64_t>& order,
                         std::size_t at, const std::vector<std::vector<double>>& s,
                         std::vector<char>& dirty) {
  const std::uint64_t per = tables[0].t.size();
  const double cap = tables[order[at] / per].t[order[at] % per];
  for (; at < order.size() && tables[order[at] / per].t[order[at] % per] == cap; ++at) {
    const auto b = static_cast<std::size_t>(order[at] / per);
    if (dirty[b]) continue;
    const auto [i, k] = end_and_length(order[at] % per);
    if (s[b][static_cast<std::size_t>(i - k)] + cap < s[b][static_cast<std::size_t>(i)]) dirty[b] = 1;
  }
  return at;
}

// The cap t_max minimising knapsack(S_b under t_max) + (K − 1)·t_max, the
// smallest on ties. Caps are tried in increasing order; only the tables a
// cap may change are solved again, and a cap that changes none is skipped:
// its time is the last one's plus (K − 1)·(the step), no better.
CapSearch search_caps(const std::vector<Table>& tables, int units, int batch, int K,
                      const CapProgress& progress) {
  const int bmax = static_cast<int>(tables.size());
  const std::uint64_t per = tables[0].t.size();
  const std::vector<std::uint64_t> order = slices_by_time(tables);
  std::vector<std::vector<double>> s(static_cast<std::size_t>(bmax));
  std::vector<double> sl(static_cast<std::size_t>(batch) + 1);
  std::vector<double> f(static_cast<std::size_t>(batch) + 1);
  // A lower bound on every cap's time: the unconstrained best sum (no cap)
  // plus (K − 1)·cap. It grows with the cap, so once it reaches the best
  // time found no larger cap can do better (often long before K·cap does).
  for (int b = 1; b <= bmax; ++b)
    sl[static_cast<std::size_t>(b)] = token_dp(tables[static_cast<std::size_t>(b) - 1], units, kInf,
                                               s[static_cast<std::size_t>(b) - 1], nullptr);
  const double uncapped = knapsack(sl, batch, bmax, f, nullptr);
  // No slicing is feasible under a cap below the one-unit slice that ends
  // the sequence; at the first cap from there every table is solved.
  const double floor_cap = tables[0].at(units, 1);
  std::size_t at = static_cast<std::size_t>(
      std::lower_bound(order.begin(), order.end(), floor_cap,
                       [&](std::uint64_t g, double v) { return tables[g / per].t[g % per] < v; }) -
      order.begin());
  std::vector<char> dirty(static_cast<std::size_t>(bmax), 1);
  CapSearch out;
  double best = kInf;
  // Progress: the slices passed, of those below the largest cap that can
  // still beat `best` (the loop's exit test below), told each thousandth.
  const std::size_t start = at;
  std::size_t told = SIZE_MAX;
  auto tell = [&](bool last) {
    if (!progress) return;
    const double limit = K > 1 ? std::min(best / K, (best - uncapped) / (K - 1)) : best / K;
    const auto end = static_cast<std::size_t>(
        std::lower_bound(order.begin() + static_cast<std::ptrdiff_t>(at), order.end(), limit,
                         [&](std::uint64_t g, double v) { return tables[g / per].t[g % per] < v; }) -
        order.begin());
    const std::size_t total = std::max<std::size_t>(end - start, 1);
    const std::size_t done = last ? total : std::min(at - start, total);
    if (const std::size_t k = done * 1000 / total; k != told || last) {
      told = k;
      progress(done, total);
    }
  };
  while (at < order.size()) {
    tell(false);
    const double cap = tables[order[at] / per].t[order[at] % per];
    if (K * cap >= best || uncapped + (K - 1) * cap >= best) break;
    ++out.caps_tried;
    at = mark_changed(tables, order, at, s, dirty);
    bool changed = false;
    for (std::size_t b = 0; b < dirty.size(); ++b)
      if (dirty[b]) {
        sl[b + 1] = token_dp(tables[b], units, cap, s[b], nullptr);
        dirty[b] = 0;
        changed = true;
      }
    if (!changed) continue;
    const double t = knapsack(sl, batch, bmax, f, nullptr) + (K - 1) * cap;
    if (t < best) {
      best = t;
      out.cap = cap;
    }
  }
  MESHSIM_ASSERT(best < kInf, "the token DP found no slicing");
  tell(true);
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
