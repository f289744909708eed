#include "pipeline/pass_kernels.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "model/layer_kernels.h"
#include "pipeline/layout.h"
#include "sim/compute_model.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::model;
using namespace meshsim::pipeline;

namespace {

// GPT, 2 transformer layers, h 256, 4 heads, s 64, vocabulary 100, as one
// stage: embedding, layer0, layer1, lm_head.
VirtualStage whole(const Model& m) {
  std::vector<int> stage_of;
  return split_stages(m, 1, {.tp = 2}, stage_of)[0];
}

}  // namespace

TEST_CASE("a GPT stage's pass lists each layer's kernels, and B and W split the backward",
          "[pipeline-kernels]") {
  const Model m = gpt_model("m", 2, 256, 4, 64, 100);
  const VirtualStage vs = whole(m);
  // Microbatches of 2, tp 2. Forward: 6 GEMMs per layer and the LM head's
  // 128 x 50 x 256 (b·s rows, vocabulary / t, h); memory: the embedding's
  // lookup (2 x 2·64·256 elements x 2 bytes) and 6 kernels per layer.
  const auto f = pass_kernels(m, vs, Pass::forward, {2, 2, false, model::Recompute::none});
  REQUIRE(f);
  CHECK(f->gemms.size() == 13);
  CHECK(f->gemms.back() == plan::KernelList::Gemm{128, 50, 256, 1});
  CHECK(f->memory_bytes.size() == 13);
  CHECK(f->memory_bytes.front() == Bytes(131072));
  // The textbook FLOPs: b · the stage's forward FLOPs / t.
  CHECK(f->flops() == Approx(2 * vs.forward_flops / 2));
  const auto b = pass_kernels(m, vs, Pass::backward, {2, 2, false, model::Recompute::none});
  REQUIRE(b);
  CHECK(b->flops() == Approx(2 * f->flops()));
  CHECK(b->bytes() == f->bytes() * 2);
  // zb-h1: W holds the weight gradients of the 4 weight GEMMs per layer and
  // of the LM head (9), B the rest (2 x 8 + 1) and every memory-bound kernel.
  const auto bs = pass_kernels(m, vs, Pass::backward, {2, 2, true, model::Recompute::none});
  const auto w = pass_kernels(m, vs, Pass::weight, {2, 2, true, model::Recompute::none});
  REQUIRE(bs);
  REQUIRE(w);
  CHECK(w->gemms.size() == 9);
  CHECK(w->memory_bytes.empty());
  CHECK(bs->gemms.size() == 17);
  CHECK(bs->bytes() == b->bytes());
  CHECK(bs->flops() + w->flops() == Approx(b->flops()));
  // Recomputation: the backward runs the forward again first.
  const auto rb = pass_kernels(m, vs, Pass::backward, {2, 2, false, model::Recompute::full});
  REQUIRE(rb);
  CHECK(rb->flops() == Approx(3 * f->flops()));
  CHECK(rb->bytes() == f->bytes() * 3);
}

TEST_CASE("models given as layer lists keep the roofline", "[pipeline-kernels]") {
  Model m;
  m.name = "list";
  m.layers.push_back({"l0", 1e9, 1e6, 1e6, {1024, 512}, 0, false, {}, {}, std::nullopt});
  VirtualStage vs;
  vs.end_layer = 1;
  CHECK_FALSE(pass_kernels(m, vs, Pass::forward, {1, 1, false, model::Recompute::none}));
}

TEST_CASE("a listed layer's kernels grow with the microbatch and split over the tensor ranks",
          "[pipeline-kernels]") {
  // One layer, per sample: a weight GEMM 16 x 8 x 4 (rows grow) and an
  // attention product 16 x 16 x 2 over 2 heads (batch grows, no weights),
  // one memory kernel of 100 B. Microbatch 4, tp 2:
  //   forward   GEMMs 64 x 4 x 4 and 16 x 8 x 2 batch 8; memory 4*100/2 = 200 B
  //   backward  (recomputing) the forward again, then per GEMM its input
  //             gradient m x k x n and second gradient k x n x m; memory 2 x 200 B
  //   split     W holds only the weight GEMM's gradient 4 x 4 x 64
  Model m;
  m.name = "listed";
  LayerCost l{"l0", 0, 1e3, 1e3, {16, 8}, 0, false, {}, {}, std::nullopt};
  l.kernels = LayerKernels{{{{16, 8, 4, 1}, false, true}, {{16, 16, 2, 2}, true, false}}, {100}, {}};
  m.layers.push_back(l);
  VirtualStage vs;
  vs.end_layer = 1;
  using G = plan::KernelList::Gemm;
  const auto f = pass_kernels(m, vs, Pass::forward, {4, 2, false, model::Recompute::none});
  REQUIRE(f);
  CHECK(f->gemms == std::vector<G>{{64, 4, 4, 1}, {16, 8, 2, 8}});
  CHECK(f->memory_bytes == std::vector<Bytes>{Bytes(200)});
  const auto b = pass_kernels(m, vs, Pass::backward, {4, 2, false, model::Recompute::full});
  REQUIRE(b);
  CHECK(b->gemms ==
        std::vector<G>{
            {64, 4, 4, 1}, {64, 4, 4, 1}, {4, 4, 64, 1}, {16, 8, 2, 8}, {16, 2, 8, 8}, {2, 8, 16, 8}});
  CHECK(b->memory_bytes == std::vector<Bytes>{Bytes(200), Bytes(400)});
  const auto bs = pass_kernels(m, vs, Pass::backward, {4, 2, true, model::Recompute::none});
  const auto w = pass_kernels(m, vs, Pass::weight, {4, 2, true, model::Recompute::none});
  REQUIRE(bs);
  REQUIRE(w);
  CHECK(bs->gemms == std::vector<G>{{64, 4, 4, 1}, {16, 2, 8, 8}, {2, 8, 16, 8}});
  CHECK(w->gemms == std::vector<G>{{4, 4, 64, 1}});
  CHECK(w->memory_bytes.empty());
}

TEST_CASE("a thin microbatch's pass costs more than its FLOPs at the peak", "[pipeline-kernels]") {
  // GPT-3 1.3B's shape (h 2048, 16 heads, s 2048), one layer per stage at
  // microbatch 1, tp 8 on an A100 at its peak: the kernels (tiles, waves,
  // memory-bound kernels, a launch each) take longer than the roofline of
  // the FLOPs alone.
  const Model m = gpt_model("g", 1, 2048, 16, 2048, 50257);
  std::vector<int> stage_of;
  const VirtualStage layer = split_stages(m, 3, {.tp = 8}, stage_of)[1];
  REQUIRE(m.layers[static_cast<std::size_t>(layer.first_layer)].transformer);
  sim::DeviceModel a100 = *sim::find_device_model("A100");
  a100.compute_efficiency.fill(1.0);
  const auto k = pass_kernels(m, layer, Pass::forward, {1, 8, false, model::Recompute::none});
  REQUIRE(k);
  const double at_peak = k->flops() / a100.peak(plan::DType::f16);
  CHECK(a100.kernels_time(*k).seconds() > 1.2 * at_peak);
}

TEST_CASE("calibrate --layers times a layer list's whole passes, its layers split each way",
          "[pipeline-kernels]") {
  const Model m = load_model_file(std::string(MESHSIM_SOURCE_DIR) + "/tests/data/models/tiny-unet.json");
  // tp 2, microbatch 2. By channels, forward: the rows grow with the
  // microbatch, n halves: down 512 x 4 x 72 and 128 x 8 x 72, mid0 and mid1
  // 128 x 8 x 144, up 512 x 4 x 216. By batch each rank takes one sample:
  // 256 x 8 x 72, 64 x 16 x 72, 64 x 16 x 144 (twice), 256 x 8 x 216.
  // Backward: each GEMM's input gradient m x k x n and weight gradient
  // k x n x m.
  const auto lists = calibration_kernel_lists(m, {2}, {2});
  REQUIRE(lists.size() == 4);  // channels forward, backward; batch forward, backward
  using G = plan::KernelList::Gemm;
  CHECK(
      lists[0].gemms ==
      std::vector<G>{{512, 4, 72, 1}, {128, 8, 72, 1}, {128, 8, 144, 1}, {128, 8, 144, 1}, {512, 4, 216, 1}});
  REQUIRE(lists[1].gemms.size() == 10);
  CHECK(lists[1].gemms[0] == G{512, 72, 4, 1});
  CHECK(lists[1].gemms[1] == G{72, 4, 512, 1});
  CHECK(
      lists[2].gemms ==
      std::vector<G>{{256, 8, 72, 1}, {64, 16, 72, 1}, {64, 16, 144, 1}, {64, 16, 144, 1}, {256, 8, 216, 1}});
  CHECK(lists[3].gemms.size() == 10);
  // One rank, or a microbatch that does not divide over the ranks: channels only.
  CHECK(calibration_kernel_lists(m, {1}, {2}).size() == 2);
  CHECK(calibration_kernel_lists(m, {2}, {3}).size() == 2);
  // Two degrees and two sizes: (1, 1), (1, 2) channels only; (2, 1) too; (2, 2) both.
  CHECK(calibration_kernel_lists(m, {1, 2}, {1, 2}).size() == 10);
  // A GPT model: one layer, as before.
  const Model gpt = gpt_model("g", 2, 256, 4, 64, 100);
  CHECK(calibration_kernel_lists(gpt, {2}, {1}) == gpt_layer_kernel_lists(gpt, {2}, {1}));
  // A layer list without kernels has nothing to time.
  Model bare;
  bare.name = "bare";
  bare.layers.push_back({"l0", 1e9, 1e6, 1e6, {1024, 512}, 0, false, {}, {}, std::nullopt});
  CHECK_THROWS_AS(calibration_kernel_lists(bare, {1}, {1}), UsageError);
  CHECK_THROWS_AS(calibration_kernel_lists(m, {0}, {1}), UsageError);
  // Layer down's first GEMM has 8 columns: 3 ranks cannot split them.
  CHECK_THROWS_WITH(calibration_kernel_lists(m, {3}, {1}),
                    Catch::Contains("layer down has a GEMM of 8 columns, which do not split over 3"));
}
