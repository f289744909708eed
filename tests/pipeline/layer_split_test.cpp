#include "pipeline/layer_split.h"

#include <algorithm>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "pipeline/iteration.h"
#include "pipeline/layout.h"
#include "pipeline/pass_kernels.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::model;
using namespace meshsim::pipeline;

namespace {

// f32 layers with kernel lists: `params` bytes, one all-reduce of
// `allreduce` elements, output of `out` elements.
LayerCost listed(const char* name, double params, double allreduce, std::int64_t out) {
  LayerCost l{name, 0, params, 400, {out}, 0, false, {}, {}, std::nullopt};
  l.kernels = LayerKernels{{{{1, 8, 8, 1}, false, true}}, {}, {allreduce}};
  return l;
}

// Layer a: small weights, a big all-reduce; layer b: big weights, a small
// all-reduce; a's output (25 elements, 100 B) feeds b.
Model two_layers() {
  Model m;
  m.name = "two";
  m.dtype = plan::DType::f32;
  m.layers = {listed("a", 1000, 100, 25), listed("b", 100'000, 10, 25)};
  return m;
}

PipelineConfig tp2() {
  PipelineConfig cfg;
  cfg.tp = 2;
  cfg.microbatches = 4;
  cfg.microbatch_size = 2;
  return cfg;
}

std::vector<VirtualStage> one_stage(const Model& m) {
  std::vector<int> stage_of;
  return split_stages(m, 1, {.tp = 2}, stage_of);
}

}  // namespace

TEST_CASE("each layer takes the split that moves fewer bytes, gathers counted", "[layer-split]") {
  // tp 2 (ring factor 1/2), 4 microbatches of 2, no recomputation: 16
  // samples-passes (forward and backward) per iteration.
  //   a by channels: 16 x 2 x 1/2 x 400 B = 6,400; by batch: 2 x 1/2 x 1,000 = 1,000
  //   b by channels: 16 x 1/2 x 2 x 40 B  = 640;    by batch: 100,000
  //   a by batch, b by channels gathers a's 100 B: 16 x 1/2 x 100 = 800
  // {batch, channels} = 2,440 beats {channels, channels} = 7,040.
  const Model m = two_layers();
  auto stages = one_stage(m);
  choose_layer_splits(m, stages, tp2(), {});
  CHECK(stages[0].splits == std::vector<LayerSplit>{LayerSplit::batch, LayerSplit::channels});
  CHECK(stages[0].batch_param_bytes == 1000);
  // b's all-reduce (40 B) and the gather, as an all-reduce of half its 100 B.
  CHECK(stages[0].tp_allreduce_bytes == 90);
  CHECK(describe_splits(stages[0]) == "batch 0, channels 1");
  CHECK(rank_param_bytes(stages[0], 2) == Approx(1000 + 100'000 / 2.0));
}

TEST_CASE(
    "a batch split must fit in memory, a forced split needs no room, a thin microbatch stays by channels",
    "[layer-split]") {
  // Splitting a by batch adds 1,000 / 4 params x 16 B x (1 - 1/2) = 2,000 B per rank.
  const Model m = two_layers();
  auto stages = one_stage(m);
  choose_layer_splits(m, stages, tp2(), {1999});
  CHECK(stages[0].splits == std::vector<LayerSplit>{LayerSplit::channels, LayerSplit::channels});
  CHECK(stages[0].tp_allreduce_bytes == 440);
  CHECK(stages[0].batch_param_bytes == 0);
  choose_layer_splits(m, stages, tp2(), {2000});
  CHECK(stages[0].splits[0] == LayerSplit::batch);

  PipelineConfig cfg = tp2();
  cfg.layer_split = LayerSplit::batch;  // forced: no limit asked
  choose_layer_splits(m, stages, cfg, {0});
  CHECK(stages[0].splits == std::vector<LayerSplit>{LayerSplit::batch, LayerSplit::batch});
  CHECK(stages[0].tp_allreduce_bytes == 0);
  CHECK(describe_splits(stages[0]) == "batch 0-1");

  cfg.microbatch_size = 3;  // does not divide over 2 ranks
  CHECK_THROWS_AS(choose_layer_splits(m, stages, cfg, {}), UsageError);
  cfg.layer_split.reset();
  choose_layer_splits(m, stages, cfg, {});
  CHECK(stages[0].splits == std::vector<LayerSplit>{LayerSplit::channels, LayerSplit::channels});

  Model gpt = two_layers();
  for (auto& l : gpt.layers) l.kernels.reset();  // no kernel lists: nothing to choose
  auto plain = one_stage(gpt);
  choose_layer_splits(gpt, plain, tp2(), {});
  CHECK(plain[0].splits.empty());
  cfg.layer_split = LayerSplit::batch;
  cfg.microbatch_size = 2;
  CHECK_THROWS_AS(choose_layer_splits(gpt, plain, cfg, {}), UsageError);
}

TEST_CASE("past the exact search, the greedy split keeps within memory and beats channels", "[layer-split]") {
  // 20 layers like a (batch is 5.4x cheaper each): without a limit every
  // layer goes by batch and nothing is gathered; with room for 7 batch
  // layers (2,000 B each) exactly 7 go, and the cost stays below all
  // channels (checked through the all-reduce bytes left per forward).
  Model m;
  m.name = "twenty";
  m.dtype = plan::DType::f32;
  for (int i = 0; i < 20; ++i) m.layers.push_back(listed("a", 1000, 100, 25));
  auto stages = one_stage(m);
  choose_layer_splits(m, stages, tp2(), {});
  CHECK(std::count(stages[0].splits.begin(), stages[0].splits.end(), LayerSplit::batch) == 20);
  CHECK(stages[0].tp_allreduce_bytes == 0);
  choose_layer_splits(m, stages, tp2(), {7 * 2000.0});
  CHECK(std::count(stages[0].splits.begin(), stages[0].splits.end(), LayerSplit::batch) == 7);
  CHECK(stages[0].batch_param_bytes == 7000);
  CHECK(stages[0].tp_allreduce_bytes < 20 * 400);
}

TEST_CASE("a batch-split layer runs the microbatch's share, and its gradients are all-reduced once",
          "[layer-split]") {
  // Layer: GEMM 1 x 8 x 8 per sample (rows grow). Microbatch 2, tp 2: by
  // channels 2 x 4 x 8, by batch 1 x 8 x 8.
  const Model m = two_layers();
  auto stages = one_stage(m);
  stages[0].splits = {LayerSplit::batch, LayerSplit::channels};
  using G = plan::KernelList::Gemm;
  const auto f = pass_kernels(m, stages[0], Pass::forward, {2, 2, false, model::Recompute::none});
  REQUIRE(f);
  CHECK(f->gemms == std::vector<G>{{1, 8, 8, 1}, {2, 4, 8, 1}});

  // In the plan: one all-reduce of a's 1,000 B over both tensor ranks of
  // both replicas, and each rank's Adam step over a whole and half of b.
  topology::ClusterSpec spec;
  spec.host_preset = "dgx-h100";
  spec.hosts = 1;
  const auto t = topology::build_cluster(spec);
  PipelineConfig cfg = tp2();
  cfg.dp = 2;
  cfg.pp = 1;
  cfg.layer_split = LayerSplit::batch;
  cfg.stage_starts = {};
  Model one = two_layers();
  one.layers.pop_back();
  const PipelineIteration it = build_pipeline(one, t, cfg);
  const auto ar = std::find_if(it.plan.tasks.begin(), it.plan.tasks.end(),
                               [](const plan::Task& k) { return k.id == "batch-split-allreduce/s0"; });
  REQUIRE(ar != it.plan.tasks.end());
  CHECK(ar->size == Bytes(1000));
  CHECK(ar->devices.size() == 4);
  CHECK(std::none_of(it.plan.tasks.begin(), it.plan.tasks.end(), [](const plan::Task& k) {
    return k.id.find("tp-allreduce") != std::string::npos || k.id.find("dp-allreduce") != std::string::npos;
  }));
  CHECK(it.memory[0].weights_bytes == 1000);
  CHECK(it.memory[0].training_state_bytes == 1000 / 4 * kTrainingBytesPerParam);
}
