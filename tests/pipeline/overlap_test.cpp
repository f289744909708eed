// Overlap as the frameworks run it, by hand on a small GPT: gradients
// reduced bucket by bucket during the last backward, ZeRO's weight gathers
// during the forward, tensor-parallel collectives beside the compute.
#include <algorithm>
#include <string_view>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "pipeline/iteration.h"
#include "pipeline/layout.h"
#include "tests/pipeline/pipeline_test_util.h"

using namespace meshsim;
using namespace meshsim::model;
using namespace meshsim::pipeline;
using namespace meshsim::pipeline::testing;

namespace {

// The small GPT (pipeline_test_util.h). At tp 2 a transformer layer is
// 24,992 parameters of one rank, the embedding 5,120; buckets of at least
// 20,000 of them: stage 1 from its end, [4, 6) (head and l3) and [3, 4);
// stage 0, [2, 3), [1, 2) and the embedding [0, 1).
PipelineConfig config() {
  PipelineConfig cfg;
  cfg.dp = 2;
  cfg.tp = 2;
  cfg.pp = 2;
  cfg.microbatches = 4;
  cfg.bucket_params = 20'000;
  return cfg;
}

std::size_t index_of(const PipelineIteration& it, std::string_view id) {
  for (std::size_t i = 0; i < it.plan.tasks.size(); ++i)
    if (it.plan.tasks[i].id == id) return i;
  FAIL("no task " << id);
  return 0;
}

bool depends(const PipelineIteration& it, std::string_view task, std::string_view on) {
  const auto& deps = it.plan.tasks[index_of(it, task)].deps;
  return std::find(deps.begin(), deps.end(), index_of(it, on)) != deps.end();
}

}  // namespace

TEST_CASE("gradient buckets: whole layers from the stage's end until a bucket holds enough",
          "[pipeline-plan]") {
  const PipelineIteration it = build_pipeline(tiny_gpt(), one_dgx_a100(), config());
  auto ranges = [&](int s) {
    std::vector<std::pair<int, int>> out;
    for (const VirtualStage& b : grad_buckets(tiny_gpt(), it.stages[static_cast<std::size_t>(s)], config()))
      out.emplace_back(b.first_layer, b.end_layer);
    return out;
  };
  CHECK(ranges(1) == std::vector<std::pair<int, int>>{{4, 6}, {3, 4}});
  CHECK(ranges(0) == std::vector<std::pair<int, int>>{{2, 3}, {1, 2}, {0, 1}});
  // Megatron-Core's default: max(4·10^7, 10^6·dp·cp) parameters.
  PipelineConfig wide = config();
  wide.bucket_params = 0;
  CHECK(wide.grad_bucket_params() == 4e7);
  wide.dp = 64;
  wide.cp = 2;
  CHECK(wide.grad_bucket_params() == 1.28e8);
}

TEST_CASE("overlapped gradient reduction: each bucket reduced once the last backward has run its layers",
          "[pipeline-plan]") {
  PipelineConfig cfg = config();
  cfg.overlap_grad_reduce = true;
  const PipelineIteration it = build_pipeline(tiny_gpt(), one_dgx_a100(), cfg);
  // Stage 1's last backward (microbatch 3 under 1F1B) runs bucket 0, then
  // bucket 1; an earlier backward is one task of the same FLOPs.
  const auto& b0 = it.plan.tasks[index_of(it, "B3/s1/r0/b0")];
  const auto& b1 = it.plan.tasks[index_of(it, "B3/s1/r0/b1")];
  CHECK(b0.flops + b1.flops == Approx(it.plan.tasks[index_of(it, "B2/s1/r0")].flops));
  CHECK(depends(it, "B3/s1/r0/b1", "B3/s1/r0/b0"));
  // Each bucket's reduction waits for its own layers on both replicas: one
  // layer's 24,992 parameters of f16 gradients per tensor rank each.
  CHECK(depends(it, "dp-allreduce/s1/t0/b0", "B3/s1/r0/b0"));
  CHECK(depends(it, "dp-allreduce/s1/t0/b0", "B3/s1/r1/b0"));
  CHECK_FALSE(depends(it, "dp-allreduce/s1/t0/b0", "B3/s1/r0/b1"));
  CHECK(it.plan.tasks[index_of(it, "dp-allreduce/s1/t0/b0")].size.count() == 49'984);
  CHECK(it.plan.tasks[index_of(it, "dp-allreduce/s1/t0/b1")].size.count() == 49'984);
  CHECK(it.plan.tasks[index_of(it, "dp-allreduce/s0/t1/b2")].size.count() == 10'240);  // the embedding
  // Simulated, bucket 0's reduction runs while the backward runs bucket 1.
  const sim::SimResult r = sim::simulate(it.plan, one_dgx_a100());
  CHECK(r.tasks[index_of(it, "dp-allreduce/s1/t0/b0")].start < r.tasks[index_of(it, "B3/s1/r0/b1")].end);
}

TEST_CASE(
    "overlapped parameter gathers: ZeRO-1's gathers as the step starts, each bucket's layers after its own",
    "[pipeline-plan]") {
  PipelineConfig cfg = config();
  cfg.zero = ZeroStage::optimizer;
  cfg.overlap_param_gather = true;
  const PipelineIteration it = build_pipeline(tiny_gpt(), one_dgx_a100(), cfg);
  // Nothing comes before a gather; stage 0's first forward runs its buckets
  // first layers first (the embedding, bucket 2), each after its gathers.
  CHECK(it.plan.tasks[index_of(it, "dp-allgather/s0/t0/b2")].deps.empty());
  CHECK(depends(it, "F0/s0/r0/b2", "dp-allgather/s0/t0/b2"));
  CHECK(depends(it, "F0/s0/r0/b2", "dp-allgather/s0/t1/b2"));
  CHECK(depends(it, "F0/s0/r0/b1", "dp-allgather/s0/t0/b1"));
  CHECK(depends(it, "F0/s0/r0/b1", "F0/s0/r0/b2"));
  // No gather waits for an optimizer step: they all moved to the start.
  for (std::size_t i = 0; i < it.plan.tasks.size(); ++i)
    if (it.plan.tasks[i].id.starts_with("dp-allgather/"))
      for (std::size_t d : it.plan.tasks[i].deps) CHECK_FALSE(it.plan.tasks[d].id.starts_with("optimizer/"));
  // Only under ZeRO-1 and 2.
  cfg.zero = ZeroStage::parameters;
  CHECK_THROWS_AS(build_pipeline(tiny_gpt(), one_dgx_a100(), cfg), UsageError);
}

TEST_CASE("tensor-parallel overlap: the pass's all-reduce beside its compute, the transfers after both",
          "[pipeline-plan]") {
  PipelineConfig cfg = config();
  cfg.tp_comm_overlap = true;
  const PipelineIteration it = build_pipeline(tiny_gpt(), one_dgx_a100(), cfg);
  const std::size_t compute = index_of(it, "F1/s0/r0");
  const auto& ar = it.plan.tasks[index_of(it, "F1/s0/r0/tp-allreduce")];
  CHECK(ar.deps == it.plan.tasks[compute].deps);  // from the compute's start, not after it
  CHECK(ar.stream != it.plan.tasks[compute].stream);
  // The activation sent on waits for the compute and the all-reduce.
  for (const plan::Task& t : it.plan.tasks)
    if (t.id.starts_with("F1/s0/r0/to-s1") &&
        std::find(t.deps.begin(), t.deps.end(), compute) != t.deps.end()) {
      CHECK(std::find(t.deps.begin(), t.deps.end(), index_of(it, "F1/s0/r0/tp-allreduce")) != t.deps.end());
      return;
    }
  FAIL("no transfer of F1/s0/r0 waits for its compute");
}
