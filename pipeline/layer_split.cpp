#include "pipeline/layer_split.h"

#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::pipeline {

namespace {

// One pipeline device's choice. Per layer (its chunks' layers in order):
// the all-reduce bytes of a forward when split by channels, per sample, and
// its parameter bytes (a batch split adds `state` times them on each rank).
// Per tensor
// read inside a stage: its bytes per sample, gathered when its maker is
// split by batch and its reader by channels.
struct Choice {
  struct Gather {
    std::size_t from = 0, to = 0;  // indices into the layers
    double bytes = 0;
  };
  std::vector<double> allreduce, params;
  std::vector<Gather> gathers;
  double samples = 0;  // per iteration: microbatches × microbatch size × passes (F, B, recomputed F)
  double ring = 0;     // (t − 1) / t
  double state = 0;  // memory per parameter byte a batch split adds: (1 − 1/t) × training bytes / element
  double free = std::numeric_limits<double>::infinity();

  // Ring bytes per iteration of the splits `batch` (1: by batch).
  [[nodiscard]] double cost(const std::vector<char>& batch) const {
    double bytes = 0;
    for (std::size_t i = 0; i < params.size(); ++i)
      bytes += batch[i] ? 2 * ring * params[i] : samples * 2 * ring * allreduce[i];
    for (const Gather& g : gathers)
      if (batch[g.from] && !batch[g.to]) bytes += samples * ring * g.bytes;
    return bytes;
  }
  [[nodiscard]] double used(const std::vector<char>& batch) const {
    double bytes = 0;
    for (std::size_t i = 0; i < params.size(); ++i) bytes += batch[i] ? params[i] : 0;
    return state * bytes;
  }
};

// Visits the virtual stages of pipeline device p: f(stage, index of its first layer in the choice).
template <typename F>
void for_chunks(std::vector<VirtualStage>& stages, const model::ParallelConfig& cfg, int p, F f) {
  std::size_t first = 0;
  for (int c = 0; c < cfg.virtual_stages; ++c) {
    VirtualStage& vs = stages[static_cast<std::size_t>(c * cfg.pp + p)];
    f(vs, first);
    first += static_cast<std::size_t>(vs.end_layer - vs.first_layer);
  }
}

Choice make_choice(const model::Model& m, std::vector<VirtualStage>& stages, const model::ParallelConfig& cfg,
                   int p) {
  Choice c;
  const double t = cfg.tp;
  c.ring = (t - 1) / t;
  c.samples = static_cast<double>(cfg.microbatches) * cfg.microbatch_size * (cfg.full_recompute() ? 3 : 2);
  const double elem = static_cast<double>(plan::dtype_size(m.dtype));
  c.state = (1 - 1 / t) *
            model::state_bytes_per_param(model::state_precision(elem), cfg.zero, cfg.replicas()) / elem;
  for_chunks(stages, cfg, p, [&](const VirtualStage& vs, std::size_t first) {
    // A tensor of layer `from` read by `readers`: the reads inside the stage.
    auto read = [&](int from, const std::vector<int>& readers, const std::vector<std::int64_t>& shape) {
      const double bytes = static_cast<double>(plan::Tensor{"", shape, m.dtype}.bytes().count());
      for (int r : readers)
        if (r > from && r < vs.end_layer)
          c.gathers.push_back({first + static_cast<std::size_t>(from - vs.first_layer),
                               first + static_cast<std::size_t>(r - vs.first_layer), bytes});
    };
    for (int l = vs.first_layer; l < vs.end_layer; ++l) {
      const model::LayerCost& lc = m.layers[static_cast<std::size_t>(l)];
      c.allreduce.push_back(model::tp_allreduce_bytes(m, lc));
      c.params.push_back(lc.param_bytes);
      read(l, lc.skip_to, lc.output_shape);
      read(l, {l + 1}, lc.output_shape);
      for (const model::SideOutput& so : lc.side_outputs) read(l, so.to, so.shape);
    }
  });
  return c;
}

// Every assignment, all channels first: the cheapest that fits.
std::vector<char> exact(const Choice& c) {
  const std::size_t k = c.params.size();
  std::vector<char> best(k, 0), x(k, 0);
  double best_cost = c.cost(best);
  for (std::uint32_t mask = 1; mask < (std::uint32_t{1} << k); ++mask) {
    for (std::size_t i = 0; i < k; ++i) x[i] = static_cast<char>((mask >> i) & 1U);
    if (c.used(x) > c.free) continue;
    if (const double v = c.cost(x); v < best_cost) {
      best_cost = v;
      best = x;
    }
  }
  return best;
}

// Each layer's cheaper split; then, while over memory, back to channels
// the batch-split layer that costs least per byte it frees; then single
// changes that lower the cost and fit, until none does.
std::vector<char> greedy(const Choice& c) {
  const std::size_t k = c.params.size();
  std::vector<char> x(k, 0);
  for (std::size_t i = 0; i < k; ++i) x[i] = static_cast<char>(c.params[i] < c.samples * c.allreduce[i]);
  while (c.used(x) > c.free) {
    const double now = c.cost(x);
    std::size_t pick = k;
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < k; ++i) {
      if (!x[i] || c.params[i] <= 0) continue;
      x[i] = 0;
      if (const double per_byte = (c.cost(x) - now) / (c.state * c.params[i]); per_byte < best) {
        best = per_byte;
        pick = i;
      }
      x[i] = 1;
    }
    if (pick == k) return std::vector<char>(k, 0);
    x[pick] = 0;
  }
  for (bool improved = true; improved;) {
    improved = false;
    for (std::size_t i = 0; i < k; ++i) {
      const double before = c.cost(x);
      x[i] = static_cast<char>(!x[i]);
      if (c.used(x) <= c.free && c.cost(x) < before)
        improved = true;
      else
        x[i] = static_cast<char>(!x[i]);
    }
  }
  return x;
}

}  // namespace

bool layers_can_split(const model::Model& model, const model::ParallelConfig& cfg) {
  return cfg.tp > 1 && model::layers_list_kernels(model);
}

void choose_layer_splits(const model::Model& model, std::vector<VirtualStage>& stages,
                         const model::ParallelConfig& cfg, const std::vector<double>& free_bytes) {
  if (cfg.layer_split == model::LayerSplit::batch && !model::layers_list_kernels(model))
    throw UsageError(
        fmt::format("only layers that list their kernels split by batch; {}'s layers split by "
                    "channels",
                    model.name));
  if (!layers_can_split(model, cfg)) return;
  const bool divides = cfg.microbatch_size % cfg.tp == 0;
  if (cfg.layer_split == model::LayerSplit::batch && !divides)
    throw UsageError(
        fmt::format("a split by batch shares each microbatch over the {} tensor ranks: the "
                    "microbatch of {} does not divide by {}",
                    cfg.tp, cfg.microbatch_size, cfg.tp));
  for (int p = 0; p < cfg.pp; ++p) {
    Choice c = make_choice(model, stages, cfg, p);
    const std::size_t k = c.params.size();
    if (!free_bytes.empty()) c.free = free_bytes[static_cast<std::size_t>(p)];
    std::vector<char> x;
    if (cfg.layer_split)
      x.assign(k, static_cast<char>(*cfg.layer_split == model::LayerSplit::batch));
    else if (c.free < 0 || !divides)
      x.assign(k, 0);  // over memory already (the split that holds least), or no even batch share
    else
      x = k <= static_cast<std::size_t>(kExactSplitLayers) ? exact(c) : greedy(c);
    for_chunks(stages, cfg, p, [&](VirtualStage& vs, std::size_t first) {
      const auto n = static_cast<std::size_t>(vs.end_layer - vs.first_layer);
      vs.splits.assign(n, model::LayerSplit::channels);
      vs.batch_param_bytes = 0;
      vs.tp_allreduce_bytes = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (x[first + i]) {
          vs.splits[i] = model::LayerSplit::batch;
          vs.batch_param_bytes += c.params[first + i];
        } else {
          vs.tp_allreduce_bytes += c.allreduce[first + i];
        }
      }
      for (const Choice::Gather& g : c.gathers)
        if (g.from >= first && g.from < first + n && x[g.from] && !x[g.to])
          vs.tp_allreduce_bytes += g.bytes / 2;
    });
  }
}

std::string describe_splits(const VirtualStage& vs) {
  std::string out;
  for (std::size_t i = 0; i < vs.splits.size();) {
    std::size_t j = i;
    while (j + 1 < vs.splits.size() && vs.splits[j + 1] == vs.splits[i]) ++j;
    const int a = vs.first_layer + static_cast<int>(i);
    const int b = vs.first_layer + static_cast<int>(j);
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", to_string(vs.splits[i]),
                       a == b ? fmt::format("{}", a) : fmt::format("{}-{}", a, b));
    i = j + 1;
  }
  return out;
}

}  // namespace meshsim::pipeline
