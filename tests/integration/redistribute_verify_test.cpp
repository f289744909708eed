// Redistribution plans run on the host backend: synth and XLA-style move
// exactly the right elements for every pair of types.

#include <catch2/catch.hpp>

#include "reshard/redistribute/evaluate.h"
#include "runtime/host_backend.h"
#include "tests/reshard/reshard_test_util.h"
#include "topology/cluster.h"

using namespace meshsim;

using namespace meshsim::reshard::redistribute;
using meshsim::reshard::ShardingSpec;

namespace {

// Every (source, destination) pair of types of `shape` on `mesh`, every
// strategy, verified on the host; returns how many plans wrote buffers.
int verify_all_pairs(const topology::Topology& t, const std::vector<std::int64_t>& shape, const char* mesh) {
  std::string replicated = "R";
  for (std::size_t d = 1; d < shape.size(); ++d) replicated += " R";
  const Problem base =
      make_problem(t, plan::Tensor{"x", shape, plan::DType::bf16}, mesh, replicated, replicated);
  StepTimer timer(t, base);
  int written = 0;
  for (const auto& a : all_types(shape, base.axes))
    for (const auto& b : all_types(shape, base.axes)) {
      Problem p = base;
      p.src = a;
      p.dst = b;
      for (const Outcome& o : evaluate(t, p, {std::begin(kAllStrategies), std::end(kAllStrategies)}, timer)) {
        INFO(a.str() << " -> " << b.str() << " " << to_string(o.strategy));
        const auto check = runtime::verify_on_host(o.emission.plan);
        CHECK(check.ok);
        if (!check.mismatches.empty()) FAIL_CHECK(check.mismatches.front().describe());
        // A plan that moves data writes buffers, and the check covered them
        // (a device that already holds its tile keeps its source buffer).
        const bool moved =
            std::any_of(o.steps.begin(), o.steps.end(), [](const Step& s) { return s.moves_data(); });
        if (moved) {
          CHECK(check.buffers_checked > 0);
          ++written;
        }
      }
    }
  return written;
}

}  // namespace

TEST_CASE("every pair of rank-2 types on 2 x 4 p3.8xlarge GPUs moves the right elements",
          "[redistribute][verify]") {
  // 11 types: 121 pairs x 3 strategies. The 11 pairs with equal types and
  // the pairs where only slices are needed move nothing; the rest all do.
  const int written = verify_all_pairs(reshard::testing::alpa_cluster(), {16, 24}, "hosts=0-1");
  CHECK(written > 220);
}

TEST_CASE("every pair of rank-3 types on an awkward 2 x 3 mesh moves the right elements",
          "[redistribute][verify]") {
  // DGX-H100 GPUs 0-2 of hosts 0 and 1: axes of 2 and 3, dimensions that
  // are multiples of 6 but not powers of two: 19 types, 361 pairs.
  topology::ClusterSpec cs;
  cs.host_preset = "dgx-h100";
  cs.hosts = 2;
  const auto t = topology::build_cluster(cs);
  const int written = verify_all_pairs(t, {12, 6, 18}, "hosts=0-1,gpus=0-2");
  CHECK(written > 750);
}

TEST_CASE("between overlapping meshes, synth and rink move the right elements within the memory bound",
          "[redistribute][verify]") {
  // Every pair of rank-2 types from hosts 0-1 to hosts 1-2 (sharing host
  // 1) and into a 2 x 2 mesh inside the source mesh. Each sequence ends on
  // the destination mesh, so it crosses once, by a move; XLA-style, which
  // reshards within one mesh, is left out.
  const auto& t = reshard::testing::alpa_cluster();
  const std::pair<const char*, const char*> meshes[] = {{"hosts=0-1", "hosts=1-2"},
                                                        {"hosts=0-1", "hosts=0-1,gpus=1-2"}};
  int plans = 0;
  for (const auto& [sm, dm] : meshes) {
    const Problem base =
        make_problem(t, plan::Tensor{"x", {16, 24}, plan::DType::bf16}, sm, "R R", dm, "R R");
    REQUIRE(!base.one_mesh());
    StepTimer timer(t, base);
    for (const auto& a : all_types(base.tensor.shape, base.axes))
      for (const auto& b : all_types(base.tensor.shape, base.dst_axes)) {
        Problem p = base;
        p.src = a;
        p.dst = b;
        const auto outcomes = evaluate(t, p, {std::begin(kAllStrategies), std::end(kAllStrategies)}, timer);
        REQUIRE(outcomes.size() == 2);
        for (const Outcome& o : outcomes) {
          INFO(sm << " [" << a.str() << "] -> " << dm << " [" << b.str() << "] " << to_string(o.strategy));
          REQUIRE(!o.steps.empty());
          CHECK(std::count_if(o.steps.begin(), o.steps.end(),
                              [](const Step& s) { return s.kind == StepKind::move; }) == 1);
          CHECK(o.steps.back().after.dims == b.dims);
          const Emission& e = o.emission;
          Bytes widest;
          for (const auto& r : e.steps) widest = std::max(widest, r.written);
          CHECK(e.between_max <= e.max_shard);
          CHECK(e.peak_memory <= e.max_shard + widest);
          const auto check = runtime::verify_on_host(e.plan);
          CHECK(check.ok);
          if (!check.mismatches.empty()) FAIL_CHECK(check.mismatches.front().describe());
          ++plans;
        }
      }
  }
  // 2 strategies x 11 x 11 pairs per mesh pair (a 2 x 2 mesh has 11 types too).
  CHECK(plans == 2 * 2 * 11 * 11);
}
