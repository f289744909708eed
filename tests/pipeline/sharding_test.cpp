// Sequence parallelism, ZeRO's sharding, selective recomputation, expert
// and context parallelism in the iteration's plan and memory, by hand on
// small models.
#include <algorithm>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "model/layer_kernels.h"
#include "pipeline/iteration.h"
#include "pipeline/pass_kernels.h"
#include "tests/pipeline/pipeline_test_util.h"

using namespace meshsim;
using namespace meshsim::model;
using namespace meshsim::pipeline;
using namespace meshsim::pipeline::testing;

namespace {

PipelineConfig dp2_tp2_pp2() {
  PipelineConfig cfg;
  cfg.dp = 2;
  cfg.tp = 2;
  cfg.pp = 2;
  cfg.microbatches = 4;
  return cfg;
}

std::size_t count_ops(const plan::Plan& p, plan::CollectiveOp op, std::string_view id_part) {
  std::size_t n = 0;
  for (const plan::Task& t : p.tasks)
    if (t.kind == plan::TaskKind::collective && t.op == op && t.id.find(id_part) != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("ZeRO shards the training state over the replicas, stage by stage", "[pipeline-plan]") {
  // Stage 0 on one of t = 2 ranks: 110,208 / 2 = 55,104 parameters, 16 B
  // each before sharding (2 + 2 + 12), d = 2:
  //   ZeRO-0: 2, 2, 12 B          ZeRO-1: 2, 2, 6
  //   ZeRO-2: 2, 1, 6             ZeRO-3: 1, 1, 6, plus two layers' gathered
  //   weights: the largest layer of stage 0, 49,984 / 2 parameters at 2 B.
  const auto t = one_dgx_a100();
  PipelineConfig cfg = dp2_tp2_pp2();
  const double p = 55'104;
  const double expected[4][3] = {
      {2 * p, 2 * p, 12 * p}, {2 * p, 2 * p, 6 * p}, {2 * p, p, 6 * p}, {p, p, 6 * p}};
  for (int z = 0; z < 4; ++z) {
    cfg.zero = static_cast<ZeroStage>(z);
    const DeviceMemory m = build_pipeline(tiny_gpt(), t, cfg).memory[0];
    INFO("ZeRO-" << z);
    CHECK(m.params == Approx(p));
    const double gathered = z == 3 ? 2 * (49'984 / 2.0) * 2 : 0;
    CHECK(m.weights_bytes == Approx(expected[z][0] + gathered));
    CHECK(m.gradient_bytes == Approx(expected[z][1]));
    CHECK(m.optimizer_bytes == Approx(expected[z][2]));
  }
}

TEST_CASE("ZeRO reduce-scatters gradients and all-gathers weights in place of the all-reduce",
          "[pipeline-plan]") {
  const auto t = one_dgx_a100();
  PipelineConfig cfg = dp2_tp2_pp2();
  const PipelineIteration plain = build_pipeline(tiny_gpt(), t, cfg);
  // Without ZeRO: one gradient all-reduce per (stage, tensor rank): 4.
  CHECK(count_ops(plain.plan, plan::CollectiveOp::all_reduce, "dp-allreduce") == 4);
  cfg.zero = ZeroStage::optimizer;
  const PipelineIteration z1 = build_pipeline(tiny_gpt(), t, cfg);
  CHECK(count_ops(z1.plan, plan::CollectiveOp::all_reduce, "dp-allreduce") == 0);
  CHECK(count_ops(z1.plan, plan::CollectiveOp::reduce_scatter, "dp-reducescatter") == 4);
  CHECK(count_ops(z1.plan, plan::CollectiveOp::all_gather, "dp-allgather") == 4);
  // The gradient bytes are the all-reduce's, and each gather follows both replicas' optimizer steps.
  for (const plan::Task& task : z1.plan.tasks) {
    if (task.id == "dp-reducescatter/s0/t0") CHECK(task.size.count() == 55'104 * 2);
    if (task.id == "dp-allgather/s0/t0") {
      CHECK(task.size.count() == 55'104 * 2);
      REQUIRE(task.deps.size() == 2);
      for (std::size_t d : task.deps) CHECK(z1.plan.tasks[d].id.starts_with("optimizer/"));
    }
  }
  // ZeRO-3 adds, per forward and backward pass and tensor rank, a gather
  // of the stage's weights: 4 microbatches x 2 passes x 2 stages x 2 ranks.
  cfg.zero = ZeroStage::parameters;
  const PipelineIteration z3 = build_pipeline(tiny_gpt(), t, cfg);
  CHECK(count_ops(z3.plan, plan::CollectiveOp::all_gather, "weight-allgather") == 32);
  // Sharding moves bytes, it does not remove them: never faster than without.
  sim::SimOptions o;
  CHECK(sim::simulate(z3.plan, t, o).makespan >= sim::simulate(z1.plan, t, o).makespan);
}

TEST_CASE("sequence parallelism: an all-gather and a reduce-scatter per pass, activations / tp",
          "[pipeline-plan]") {
  const auto t = one_dgx_a100();
  PipelineConfig cfg = dp2_tp2_pp2();
  const PipelineIteration tp = build_pipeline(tiny_gpt(), t, cfg);
  cfg.sequence_parallel = true;
  const PipelineIteration sp = build_pipeline(tiny_gpt(), t, cfg);
  // Each forward and backward of each replica: one all-reduce, or one of each.
  const std::size_t passes = 4 * 2 * 2 * 2;
  CHECK(count_ops(tp.plan, plan::CollectiveOp::all_reduce, "tp-allreduce") == passes);
  CHECK(count_ops(sp.plan, plan::CollectiveOp::all_gather, "tp-allgather") == passes);
  CHECK(count_ops(sp.plan, plan::CollectiveOp::reduce_scatter, "tp-reducescatter") == passes);
  CHECK(count_ops(sp.plan, plan::CollectiveOp::all_reduce, "tp-allreduce") == 0);
  // A layer's activations per sample: s·h·(10 + 24/2 + 5·a·s/(h·2)) = 2,048·27
  // without, 2,048·(34 + 10)/2 = 2,048·22 with (Korthikanti's Table 2).
  CHECK(tp.stages[0].activation_bytes == Approx(4'096 / 2.0 + 2 * 2'048 * 27));
  CHECK(sp.stages[0].activation_bytes == Approx(4'096 / 2.0 + 2 * 2'048 * 22));
}

TEST_CASE("selective recomputation reruns the attention products and drops the scores", "[pipeline-plan]") {
  PipelineConfig cfg = dp2_tp2_pp2();
  cfg.recompute = Recompute::selective;
  const auto t = one_dgx_a100();
  const PipelineIteration it = build_pipeline(tiny_gpt(), t, cfg);
  // A layer at t = 2 stores 2,048·(10 + 24/2) bytes, the scores not.
  CHECK(it.stages[0].activation_bytes == Approx(4'096 / 2.0 + 2 * 2'048 * 22));
  // Its backward: the two attention GEMMs and the softmax again, then the
  // 12 gradient GEMMs; without recomputation 12 alone.
  const VirtualStage& vs = it.stages[1];  // l2, l3 and the head
  const auto none = pass_kernels(tiny_gpt(), vs, Pass::backward, {1, 2, false, Recompute::none});
  const auto selective = pass_kernels(tiny_gpt(), vs, Pass::backward, {1, 2, false, Recompute::selective});
  REQUIRE(none);
  REQUIRE(selective);
  CHECK(selective->gemms.size() == none->gemms.size() + 2 * 2);
  CHECK(selective->memory_bytes.size() == none->memory_bytes.size() + 2);
  CHECK(selective->flops() - none->flops() == Approx(2 * 2 * (2.0 * 32 * 32 * 16 * 2)));
}

TEST_CASE("expert parallelism: experts split over ep replicas, tokens exchanged by all-to-all",
          "[pipeline-plan]") {
  // A Llama with 4 experts (top 2, f_e = 64) on every layer: h = 64, s = 32,
  // bf16. An MoE layer's experts hold 4 x 3·64·64 = 49,152 parameters.
  TransformerSpec spec = small_llama(4, 32);
  spec.moe = MoeSpec{4, 2, 64};
  const Model m = transformer_model("moe", spec, plan::DType::bf16);
  REQUIRE(m.layers[1].expert_param_bytes == 49'152 * 2);
  const auto t = one_dgx_a100();
  PipelineConfig cfg;
  cfg.dp = 4;
  cfg.tp = 2;
  cfg.microbatches = 2;
  cfg.ep = 2;
  const PipelineIteration it = build_pipeline(m, t, cfg);
  // Per GPU: the experts / (tp·ep), the rest / tp.
  const double experts = 4 * 49'152.0;
  CHECK(it.memory[0].params == Approx((m.params() - experts) / 2 + experts / 4));
  // Each forward and backward of each group of 2 replicas and tensor rank:
  // one all-to-all of 4 layers x 2 (dispatch, combine) x 32·2·64 elements of
  // 2 bytes = 65,536 bytes; 2 microbatches x 2 passes x 2 groups x 2 ranks.
  std::size_t a2a = 0;
  for (const plan::Task& task : it.plan.tasks)
    if (task.op == plan::CollectiveOp::all_to_all && task.kind == plan::TaskKind::collective) {
      ++a2a;
      CHECK(task.size.count() == 65'536);
      CHECK(task.devices.size() == 2);
    }
  CHECK(a2a == 16);
  // The experts' gradients are all-reduced over the replicas holding the
  // same experts (0 and 2, 1 and 3), the rest over all four.
  std::size_t expert_groups = 0;
  for (const plan::Task& task : it.plan.tasks)
    if (task.id.starts_with("expert-dp-allreduce/")) {
      ++expert_groups;
      CHECK(task.devices.size() == 2);
      CHECK(task.size.count() == static_cast<std::int64_t>(experts * 2 / 4));
    }
  CHECK(expert_groups == 2 * 2);  // per tensor rank, per group
  // The busiest rank at twice the mean runs its expert GEMMs on twice the rows.
  const auto uniform = layer_forward(whole_sequences(m, 1, 2, true, 2, 1));
  const auto skewed = layer_forward(whole_sequences(m, 1, 2, true, 2, 2));
  CHECK(uniform.gemms[5] == plan::KernelList::Gemm{32, 64, 64, 2});  // 2·32·2/4 rows, 2 local experts
  CHECK(skewed.gemms[5].m == 2 * uniform.gemms[5].m);
  // ep must divide dp and the experts, and the model must have experts.
  cfg.ep = 3;
  CHECK_THROWS_AS(build_pipeline(m, t, cfg), UsageError);
  cfg.ep = 2;
  CHECK_THROWS_AS(build_pipeline(tiny_gpt(), t, cfg), UsageError);
}

TEST_CASE(
    "fused attention: one causal-halved attention kernel, no softmax kernel, scores recomputed backward",
    "[pipeline-plan]") {
  // The small GPT, one layer at t = 2, b = 1: s = 32, d = 16, 2 heads per
  // rank. Unfused: the scores GEMM 32 x 32 x 16 (x2 heads), the values
  // GEMM, and a softmax kernel; fused: one attention kernel of 2 heads, 32
  // queries against 16 keys each (half on average), and no softmax.
  model::LayerShape shape = whole_sequences(tiny_gpt(), 1, 2);
  const auto plain = layer_forward(shape);
  shape.fused_attention = true;
  const auto fused = layer_forward(shape);
  CHECK(plain.gemms[1] == plan::KernelList::Gemm{32, 32, 16, 2});
  CHECK(fused.gemms.size() == plain.gemms.size() - 2);
  REQUIRE(fused.attention.size() == 1);
  CHECK(fused.attention[0] == plan::KernelList::Attention{2, 32, 16, 16, false});
  CHECK(fused.memory_bytes.size() == plain.memory_bytes.size() - 1);
  // Saved: half of each layer's 4·s²·h/t attention FLOPs, 2·32²·64/2 = 65,536.
  CHECK(plain.flops() - fused.flops() == Approx(65'536));
  // The backward is one attention kernel of five products (the scores
  // rerun, as FlashAttention's backward does, and four gradients): 2.5 x
  // the forward's 65,536 FLOPs; selective recomputation adds nothing more.
  const auto back = layer_backward(fused);
  REQUIRE(back.attention.size() == 1);
  CHECK(back.attention[0].backward);
  CHECK(back.attention[0].flops() == Approx(2.5 * 65'536));
  const PipelineIteration it = build_pipeline(tiny_gpt(), one_dgx_a100(), dp2_tp2_pp2());
  const VirtualStage& vs = it.stages[1];  // l2, l3, head
  PassOptions o{1, 2, false, Recompute::none};
  o.fused_attention = true;
  const auto backward = pass_kernels(tiny_gpt(), vs, Pass::backward, o);
  o.recompute = Recompute::selective;
  const auto selective = pass_kernels(tiny_gpt(), vs, Pass::backward, o);
  REQUIRE(backward);
  CHECK(backward->attention.size() == 2);  // one per layer
  CHECK(selective == backward);
  // Under zb-h1 the attention's backward is all in B: W holds weight gradients only.
  o = PassOptions{1, 2, true, Recompute::none};
  o.fused_attention = true;
  const auto b = pass_kernels(tiny_gpt(), vs, Pass::backward, o);
  const auto w = pass_kernels(tiny_gpt(), vs, Pass::weight, o);
  CHECK(b->attention.size() == 2);
  CHECK(w->attention.empty());
  CHECK(b->gemms.size() + w->gemms.size() == backward->gemms.size());
}

TEST_CASE("context parallelism: each layer's keys and values gathered beside the pass, tokens / cp",
          "[pipeline-plan]") {
  // A Llama of 2 layers: h = 64, a = 4, g = 2 (d = 16: g·d = 32), s = 32,
  // bf16. A layer's keys and values per sample: 2·32·32 elements x 2 B =
  // 4,096 B. cp = 2, tp = 2, one stage, 2 microbatches of 1, fused attention.
  const Model m = transformer_model("llama", small_llama(2, 32), plan::DType::bf16);
  const auto t = one_dgx_a100();
  PipelineConfig cfg;
  cfg.tp = 2;
  cfg.microbatches = 2;
  cfg.flash_attention = true;
  cfg.zero = ZeroStage::optimizer;
  const PipelineIteration one = build_pipeline(m, t, cfg);
  cfg.cp = 2;
  const PipelineIteration it = build_pipeline(m, t, cfg);
  // Per pass and tensor rank, over the context group (ranks t and t + 2):
  // forward, an all-gather of 2 layers x 4,096 / t = 4,096 B; backward, an
  // all-gather and a reduce-scatter of as much. 2 microbatches x 3 x 2 ranks.
  std::size_t exchanges = 0;
  for (std::size_t i = 0; i < it.plan.tasks.size(); ++i) {
    if (it.task_kind[i] != PipelineIteration::Kind::context_exchange) continue;
    const plan::Task& task = it.plan.tasks[i];
    ++exchanges;
    CHECK(task.size.count() == 4'096);
    REQUIRE(task.devices.size() == 2);
    const bool t1 = task.id.find("/t1/") != std::string::npos;
    CHECK(it.plan.devices[task.devices[0]] == (t1 ? "h0/gpu1" : "h0/gpu0"));
    CHECK(it.plan.devices[task.devices[1]] == (t1 ? "h0/gpu3" : "h0/gpu2"));
    CHECK(task.op == (task.id.ends_with("cp-reducescatter") ? plan::CollectiveOp::reduce_scatter
                                                            : plan::CollectiveOp::all_gather));
  }
  CHECK(exchanges == 12);
  // Each rank runs half the tokens: with the causal work balanced, exactly
  // half of the whole sequence's FLOPs.
  auto find = [](const PipelineIteration& x, std::string_view id) -> const plan::Task& {
    for (const plan::Task& task : x.plan.tasks)
      if (task.id == id) return task;
    FAIL("no task " << id);
    return x.plan.tasks.front();
  };
  CHECK(find(it, "F0/s0/r0").flops == Approx(find(one, "F0/s0/r0").flops / 2));
  CHECK(find(it, "F0/s0/r0/tp-allreduce").size.count() * 2 ==
        find(one, "F0/s0/r0/tp-allreduce").size.count());
  // The exchange runs beside the compute: the compute does not wait for it,
  // the tensor all-reduce after it does.
  std::size_t gather = 0;
  for (std::size_t i = 0; i < it.plan.tasks.size(); ++i)
    if (it.plan.tasks[i].id == "F0/s0/g0/t0/cp-allgather") gather = i;
  const auto& compute_deps = find(it, "F0/s0/r0").deps;
  const auto& ar_deps = find(it, "F0/s0/r0/tp-allreduce").deps;
  CHECK(std::find(compute_deps.begin(), compute_deps.end(), gather) == compute_deps.end());
  CHECK(std::find(ar_deps.begin(), ar_deps.end(), gather) != ar_deps.end());
  // The context ranks hold the same weights: gradients are reduce-scattered
  // over both, and ZeRO shards the optimizer state over dp·cp = 2.
  CHECK(find(it, "dp-reducescatter/s0/t0").devices.size() == 2);
  CHECK(it.memory[0].optimizer_bytes == Approx(one.memory[0].optimizer_bytes / 2));
  CHECK(it.memory[0].activation_bytes == Approx(one.memory[0].activation_bytes / 2));
  // Context parallelism needs fused attention and 2·cp equal chunks.
  cfg.flash_attention = false;
  CHECK_THROWS_AS(build_pipeline(m, t, cfg), UsageError);
  cfg.flash_attention = true;
  cfg.cp = 3;
  CHECK_THROWS_AS(build_pipeline(m, t, cfg), UsageError);
}

TEST_CASE(
    "FP8: the transformer layers' weight GEMMs, forward and both gradients; attention and the head stay",
    "[pipeline-plan]") {
  // Stage 1 of the small GPT (l2, l3, head) at t = 2, unfused attention:
  // per layer forward QKV, scores, values, output projection and the MLP's
  // two GEMMs; FP8 marks the four weight GEMMs of each layer and their
  // eight gradient GEMMs, not the attention products or the head's.
  const PipelineIteration it = build_pipeline(tiny_gpt(), one_dgx_a100(), dp2_tp2_pp2());
  const VirtualStage& vs = it.stages[1];
  PassOptions o{1, 2, false, Recompute::none};
  o.fp8 = true;
  auto count = [](const plan::KernelList& k) {
    return std::count_if(k.gemms.begin(), k.gemms.end(), [](const auto& g) { return g.fp8; });
  };
  const auto forward = pass_kernels(tiny_gpt(), vs, Pass::forward, o);
  const auto backward = pass_kernels(tiny_gpt(), vs, Pass::backward, o);
  REQUIRE(forward);
  REQUIRE(backward);
  CHECK(count(*forward) == 2 * 4);
  CHECK(forward->gemms.size() == 2 * 6 + 1);
  CHECK(count(*backward) == 2 * 8);
  CHECK(backward->gemms.size() == 2 * 12 + 2);
  // Only on GPUs with FP8 tensor cores: the A100 has none.
  PipelineConfig cfg = dp2_tp2_pp2();
  cfg.fp8 = true;
  CHECK_THROWS_AS(build_pipeline(tiny_gpt(), one_dgx_a100(), cfg), UsageError);
}
