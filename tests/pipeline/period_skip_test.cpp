// Skipping a training step's repeated periods (sim/period_skip.h) gives the
// times of the full simulation exactly, over schedules, transfer
// strategies, layouts and the overlapping options.

#include <random>

#include <catch2/catch.hpp>

#include "model/model.h"
#include "pipeline/iteration.h"
#include "sim/executor.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::pipeline;

namespace {

topology::Topology two_hosts() {
  topology::ClusterSpec spec;
  spec.host_preset = "dgx-a100";
  spec.hosts = 2;
  spec.fabric.kind = topology::FabricKind::rail;
  return topology::build_cluster(spec);
}

sim::SimResult simulate(const PipelineIteration& it, const topology::Topology& t, bool skip, bool fluid) {
  sim::SimOptions o;
  o.fluid_broadcast = fluid;
  o.skip_periods = skip;
  return sim::simulate(it.plan, t, o);
}

}  // namespace

TEST_CASE("skipped periods: every task's times equal the full simulation's", "[period_skip]") {
  const model::Model m = model::gpt_model("m", 16, 1024, 16, 512, 1000);
  const topology::Topology t = two_hosts();
  std::mt19937 rng(20261129);
  auto pick = [&](std::initializer_list<int> xs) {
    return *(xs.begin() + std::uniform_int_distribution<std::size_t>(0, xs.size() - 1)(rng));
  };
  const model::Schedule schedules[] = {model::Schedule::gpipe, model::Schedule::one_f_one_b,
                                       model::Schedule::eager_1f1b, model::Schedule::interleaved_1f1b,
                                       model::Schedule::zb_h1};
  const reshard::Strategy reshards[] = {reshard::Strategy::broadcast, reshard::Strategy::send_recv,
                                        reshard::Strategy::allgather, reshard::Strategy::scatter};
  std::uint64_t replayed = 0;
  for (int k = 0; k < 40; ++k) {
    PipelineConfig c;
    c.tp = pick({1, 2, 4});
    c.pp = pick({2, 4});
    c.dp = 16 / (c.tp * c.pp);
    c.microbatches = pick({8, 16, 24, 32});
    c.microbatch_size = pick({1, 2});
    c.schedule = schedules[static_cast<std::size_t>(k) % 5];
    c.virtual_stages = c.schedule == model::Schedule::interleaved_1f1b ? pick({2, 4}) : 1;
    if (c.schedule == model::Schedule::interleaved_1f1b) c.microbatches = c.pp * pick({2, 4, 8});
    c.reshard = reshards[static_cast<std::size_t>(k / 5) % 4];
    c.recompute = pick({0, 1}) == 1 ? model::Recompute::selective : model::Recompute::none;
    c.sequence_parallel = c.tp > 1 && pick({0, 1}) == 1;
    c.overlap_grad_reduce = c.dp > 1 && pick({0, 1}) == 1;
    if (c.dp > 1 && pick({0, 1}) == 1) {
      c.zero = model::ZeroStage::optimizer;
      c.overlap_param_gather = pick({0, 1}) == 1;
    }
    INFO("config " << k << ": dp " << c.dp << " tp " << c.tp << " pp " << c.pp << " m " << c.microbatches
                   << " schedule " << to_string(c.schedule) << " v " << c.virtual_stages << " reshard "
                   << to_string(c.reshard) << (k % 4 == 3 ? ", chunked broadcasts" : ""));
    // Every fourth run times broadcasts chunk by chunk.
    const bool fluid = k % 4 != 3;
    const PipelineIteration it = build_pipeline(m, t, c);
    const sim::SimResult fast = simulate(it, t, true, fluid);
    const sim::SimResult full = simulate(it, t, false, fluid);
    REQUIRE(fast.tasks.size() == full.tasks.size());
    for (std::size_t i = 0; i < full.tasks.size(); ++i) {
      INFO("task " << it.plan.tasks[i].id);
      REQUIRE(fast.tasks[i].start == full.tasks[i].start);
      REQUIRE(fast.tasks[i].end == full.tasks[i].end);
      REQUIRE(fast.collectives[i].algorithm == full.collectives[i].algorithm);
    }
    CHECK(fast.critical_path == full.critical_path);
    CHECK(fast.compute_busy == full.compute_busy);
    CHECK(fast.comm_busy == full.comm_busy);
    CHECK(fast.events == full.events);
    for (std::size_t l = 0; l < full.link_bytes.size(); ++l)
      CHECK(fast.link_bytes[l] == Approx(full.link_bytes[l]).epsilon(1e-12));
    replayed += fast.replayed_tasks;
  }
  // The set is long enough for steady states to be found.
  CHECK(replayed > 10'000);
}
