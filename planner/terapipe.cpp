#include "planner/terapipe.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "planner/layer_kernels.h"
#include "sim/executor.h"

namespace meshsim::planner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// α and β from the simulated makespans of the tasks `make(plan, bytes)`
// adds (all at once), at 1 MiB and 64 MiB.
AlphaBeta fit(const topology::Topology& topo, const std::function<void(plan::Plan&, Bytes)>& make) {
  const Bytes small = Bytes::MiB(1);
  const Bytes large = Bytes::MiB(64);
  auto run = [&](Bytes b) {
    plan::Plan p;
    p.name = "terapipe-fit";
    make(p, b);
    return sim::simulate(p, topo).makespan.seconds();
  };
  const double t1 = run(small);
  const double t2 = run(large);
  AlphaBeta ab;
  ab.beta = (t2 - t1) / static_cast<double>((large - small).count());
  ab.alpha = std::max(0.0, t1 - ab.beta * static_cast<double>(small.count()));
  return ab;
}

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
CapSearch search_caps(const std::vector<Table>& tables, int units, int batch, int K) {
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
  while (at < order.size()) {
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
  return out;
}

}  // namespace

namespace {

// A collective all-reduce of `bytes` over `gpus` (names), added to `p`.
void add_allreduce(plan::Plan& p, const std::string& id, const std::vector<std::string>& gpus, Bytes bytes) {
  plan::Task t;
  t.id = id;
  t.kind = plan::TaskKind::collective;
  t.op = plan::CollectiveOp::all_reduce;
  for (const std::string& g : gpus) t.devices.push_back(plan::device_index(p, g));
  t.size = bytes;
  p.tasks.push_back(std::move(t));
}

// Memory per GPU of stage 0 (stages are alike): its training state and its
// stored activations per sequence.
void stage_memory(const Model& m, SliceCostModel& c) {
  const double elem = static_cast<double>(plan::dtype_size(m.dtype));
  int seen = 0;
  for (const auto& l : m.layers) {
    if (!l.transformer || seen++ >= c.layers_per_stage) continue;
    c.state_bytes += l.param_bytes / elem / c.tp * kTrainingBytesPerParam;
    c.activation_bytes += activation_bytes(m, l, c.tp);
  }
}

}  // namespace

SliceCostModel slice_cost_model(const Model& m, const topology::Topology& topo, int pp, int tp, int first_gpu,
                                int dp) {
  if (m.hidden <= 0 || m.sequence <= 0)
    throw UsageError(
        fmt::format("TeraPipe needs a GPT model (hidden size and sequence); {} is a layer list", m.name));
  if (tp >= 1) check_tensor_parallel(m, tp);
  int transformer = 0;
  for (const auto& l : m.layers) transformer += l.transformer ? 1 : 0;
  if (pp < 1 || tp < 1 || dp < 1 || transformer % pp != 0)
    throw UsageError(
        fmt::format("{} transformer layers do not split evenly into {} stages", transformer, pp));
  const auto& gpus = topo.gpus();
  const std::int64_t need = static_cast<std::int64_t>(pp) * dp * tp;
  if (first_gpu < 0 || first_gpu + need > static_cast<std::int64_t>(gpus.size()))
    throw UsageError(fmt::format("dp {} x pp {} x op {} = {} GPUs, but {} has {} from GPU {}", dp, pp, tp,
                                 need, topo.name, gpus.size(), first_gpu));
  // GPU of (stage p, replica r, tensor rank t): tensor ranks consecutive,
  // then stages, replicas outermost, as TeraPipe's code groups ranks
  // (data-parallel groups take every (pp·tp)-th rank), so a stage's
  // replicas sit on different hosts and their gradient all-reduce crosses
  // the network.
  auto name = [&](int p, int r, int t) {
    return topo.node(gpus[static_cast<std::size_t>(first_gpu + (r * pp + p) * tp + t)]).name;
  };
  auto group = [&](int p, int r) {
    std::vector<std::string> g;
    for (int t = 0; t < tp; ++t) g.push_back(name(p, r, t));
    return g;
  };
  SliceCostModel c;
  c.layers_per_stage = transformer / pp;
  c.tp = tp;
  c.dp = dp;
  if (tp > 1)
    c.tp_allreduce = fit(topo, [&](plan::Plan& fp, Bytes b) {
      for (int r = 0; r < dp; ++r) add_allreduce(fp, fmt::format("tp-allreduce/r{}", r), group(0, r), b);
    });
  // The slowest stage boundary sets the pace; every replica sends at once.
  for (int p = 0; p + 1 < pp; ++p) {
    const AlphaBeta ab = fit(topo, [&](plan::Plan& fp, Bytes b) {
      for (int r = 0; r < dp; ++r) {
        plan::Task t;
        t.id = fmt::format("stage-send/r{}", r);
        t.kind = plan::TaskKind::send;
        t.devices = {plan::device_index(fp, name(p, r, 0)), plan::device_index(fp, name(p + 1, r, 0))};
        t.size = b;
        fp.tasks.push_back(std::move(t));
      }
    });
    if (ab.time(64e6) > c.stage_send.time(64e6)) c.stage_send = ab;
  }
  stage_memory(m, c);
  if (dp > 1) {
    // Every (stage, tensor rank) reduces its share of the stage's gradients over the replicas.
    const Bytes share(static_cast<std::int64_t>(c.state_bytes / kTrainingBytesPerParam *
                                                static_cast<double>(plan::dtype_size(m.dtype))));
    plan::Plan ar;
    ar.name = "terapipe-gradients";
    for (int p = 0; p < pp; ++p)
      for (int t = 0; t < tp; ++t) {
        std::vector<std::string> g;
        for (int r = 0; r < dp; ++r) g.push_back(name(p, r, t));
        add_allreduce(ar, fmt::format("grad/s{}/t{}", p, t), g, share);
      }
    c.grad_allreduce_s = sim::simulate(ar, topo).makespan.seconds();
  }
  return c;
}

double terapipe_update_time(const Model& m, const SliceCostModel& c, const sim::DeviceModel& dev) {
  const double bytes_per_param = m.dtype == plan::DType::f16 || m.dtype == plan::DType::bf16 ? 48 : 28;
  const double params = c.state_bytes / kTrainingBytesPerParam;  // on one GPU
  return dev.kernel_time(0, Bytes(static_cast<std::int64_t>(params * bytes_per_param)), plan::DType::f32)
      .seconds();
}

int max_microbatch_size(const SliceCostModel& c, double capacity) {
  if (c.activation_bytes <= 0) return std::numeric_limits<int>::max();
  const double room = (capacity - c.state_bytes) / c.activation_bytes;
  return room < 1 ? 0 : static_cast<int>(std::min(room, 1e9));
}

namespace {
// Times kernel lists, each single-product GEMM shape (the weight GEMMs,
// which depend on a slice's token count only) once; the attention's batched
// products change with the context and are timed each time.
class SliceKernelTimer {
 public:
  explicit SliceKernelTimer(sim::DeviceModel d) : dev_(std::move(d)) {}
  double seconds(const plan::KernelList& k) {
    Time t;
    for (const auto& g : k.gemms) {
      if (g.batch != 1) {
        t += dev_.gemm_time(g.m, g.n, g.k, k.dtype, g.batch);
        continue;
      }
      const std::array<double, 3> key{g.m, g.n, g.k};
      auto it = single_.find(key);
      if (it == single_.end()) it = single_.emplace(key, dev_.gemm_time(g.m, g.n, g.k, k.dtype)).first;
      t += it->second;
    }
    for (Bytes bytes : k.memory_bytes) t += dev_.kernel_time(0, bytes, k.dtype);
    return t.seconds();
  }

 private:
  sim::DeviceModel dev_;
  std::map<std::array<double, 3>, Time> single_;
};
}  // namespace

SliceCostFn slice_cost(const Model& m, const SliceCostModel& c, const sim::DeviceModel& dev) {
  const auto h = static_cast<double>(m.hidden);
  const auto e = static_cast<double>(plan::dtype_size(m.dtype));
  const LayerShape shape{h, static_cast<double>(m.heads), 1, 0, 0, static_cast<double>(c.tp), m.dtype};
  const double accumulate = dev.kernels_time(gpt_layer_grad_accumulation(shape)).seconds();
  auto timer = std::make_shared<SliceKernelTimer>(dev);  // shared by the function's copies
  return [=](int len, int ctx, int b) {
    LayerShape s = shape;
    s.sequences = b;
    s.tokens = len;
    s.context = ctx;
    const double bl = b * static_cast<double>(len);
    const plan::KernelList forward = gpt_layer_forward(s);
    const double layer = timer->seconds(forward) + timer->seconds(gpt_layer_backward(forward)) + accumulate +
                         timer->seconds(kv_cache_kernels(s, static_cast<double>(m.sequence))) +
                         timer->seconds(terapipe_attention_kernels(s)) +
                         (c.tp > 1 ? 4 * c.tp_allreduce.time(bl * h * e) : 0.0);
    return c.layers_per_stage * layer + 2 * (c.stage_send.beta > 0 ? c.stage_send.time(bl * h * e) : 0.0);
  };
}

double slicing_time(const TokenSlicing& s, int K, const SliceCostFn& cost) {
  const auto [sum, worst] = sum_and_max(s, cost);
  return sum + (K - 1) * worst;
}

TokenSlicing terapipe_dp(int tokens, int batch, int K, const SliceCostFn& cost, int granularity,
                         int max_microbatch) {
  check_sizes(tokens, batch, K, granularity);
  const int bmax = microbatch_bound(max_microbatch, batch);
  const int units = tokens / granularity;
  // Refused before allocating: a table of every slice per microbatch size,
  // and its slices in order of time.
  const double table_bytes = 2.0 * bmax * (static_cast<double>(units) * (units + 1) / 2) * sizeof(double);
  if (table_bytes > kMaxTableBytes)
    throw UsageError(fmt::format(
        "the slicing tables would take {:.1f} GB ({} units of {} tokens, microbatches of 1 to {} sequences); "
        "the limit is {:.0f} GB: give a coarser --granularity or a smaller batch",
        table_bytes / 1e9, units, granularity, bmax, kMaxTableBytes / 1e9));
  std::vector<Table> tables;
  for (int b = 1; b <= bmax; ++b) tables.push_back(make_table(units, granularity, b, cost));
  const CapSearch found = search_caps(tables, units, batch, K);
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

}  // namespace meshsim::planner
