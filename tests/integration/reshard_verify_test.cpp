// The resharding planner's plans run on the host backend: every strategy
// and balancing mode moves exactly the right elements.

#include <random>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "reshard/redistribute/types.h"
#include "reshard/reshard.h"
#include "runtime/host_backend.h"
#include "tests/reshard/reshard_test_util.h"
#include "topology/cluster.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::reshard;
using namespace meshsim::reshard::testing;

TEST_CASE("every strategy's plan moves the right elements (paper cases, scaled down)", "[reshard][verify]") {
  const auto& t = alpa_cluster();
  std::vector<PaperCase> cases{
      {{64, 32, 16}, "hosts=0-1", "S0 R R", "hosts=2-3", "S0 R R"},
      {{64, 32, 16}, "hosts=0-1", "R R R", "hosts=2-3", "S0 R R"},
      {{64, 32, 16}, "hosts=0-1", "R S0 R", "hosts=2-3", "S0 R R"},
      {{64, 32, 16}, "hosts=0-1", "R S01 R", "hosts=2-3", "S01 R R"},
      {{64, 32, 16}, "hosts=0-1", "S1 R R", "hosts=2-3", "S0 R R"},
      {{96, 32, 10}, "hosts=0-1", "S0 R R", "hosts=2-4", "S0 R R"},
      {{64, 32, 16}, "hosts=0", "S1 R R", "hosts=1-2", "R R R"},
      {{64, 32, 16}, "hosts=0-1", "R S0 R", "hosts=2-3", "R R S0"},
  };
  // The one-to-many suite: one GPU to R on 1x1 ... 4x2 meshes (a 1-D tensor).
  for (const char* dst : {"hosts=1,gpus=0", "hosts=1,gpus=0-1", "hosts=1,gpus=0-2", "hosts=1",
                          "hosts=1-2,gpus=0-1", "hosts=1-3,gpus=0-1", "hosts=1-4,gpus=0-1"})
    cases.push_back(PaperCase{{1000}, "hosts=0,gpus=0", "R", dst, "R"});
  for (const PaperCase& c : cases)
    for (Strategy s : kMovingStrategies)
      for (Balance b : kBalances) {
        INFO(c.src_mesh << " [" << c.src_spec << "] -> " << c.dst_mesh << " [" << c.dst_spec << "] "
                        << to_string(s) << " " << to_string(b));
        const auto p = problem(t, c.shape, c.src_mesh, c.src_spec, c.dst_mesh, c.dst_spec);
        const auto check = runtime::verify_on_host(build_plan(t, p, unit_tasks(p), s, b));
        CHECK(check.ok);
        CHECK(check.buffers_checked == p.dst.size());
        if (!check.mismatches.empty()) FAIL_CHECK(check.mismatches.front().describe());
      }
}

TEST_CASE("random problems on awkward meshes are moved correctly", "[reshard][verify]") {
  // 8 x DGX-H100; meshes 1x3, 2x3, 3x4, 2x6, 1x5 from disjoint host ranges;
  // dimensions multiples of 60 (divisible by every shard count used), not
  // powers of two; 12 problems with specs drawn at random (seed 11).
  topology::ClusterSpec cs;
  cs.host_preset = "dgx-h100";
  cs.hosts = 8;
  const auto t = topology::build_cluster(cs);
  const std::vector<std::pair<std::string, std::string>> meshes{
      {"hosts=0,gpus=0-2", "hosts=4,gpus=0-2"},     {"hosts=0-1,gpus=0-2", "hosts=4-5,gpus=3-5"},
      {"hosts=0-2,gpus=0-3", "hosts=4-6,gpus=2-5"}, {"hosts=0-1,gpus=0-5", "hosts=5-6,gpus=1-6"},
      {"hosts=3,gpus=0-4", "hosts=7,gpus=1-5"},     {"hosts=0-2,gpus=0-3", "hosts=5-6,gpus=0-5"}};
  std::mt19937 rng(11);
  auto random_spec = [&](std::size_t rank) {
    std::vector<std::string> dims(rank, "");
    const bool both = rng() % 3 == 0;
    if (both) {
      dims[rng() % rank] = rng() % 2 ? "01" : "10";
    } else {
      for (int axis = 0; axis < 2; ++axis)
        if (rng() % 3 != 0) {
          const std::size_t d = rng() % rank;
          if (dims[d].empty()) dims[d] = std::to_string(axis);
        }
    }
    std::string out;
    for (const auto& d : dims)
      out += fmt::format("{}{}", out.empty() ? "" : " ", d.empty() ? "R" : fmt::format("S{}", d));
    return out;
  };
  // search is left out here (its 100,000-node budget per plan is what costs
  // time, and it emits plans like host-order's); the cases above cover it.
  const Balance balances[] = {Balance::none, Balance::device, Balance::host_size, Balance::host_order};
  int problems = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const auto& [sm, dm] = meshes[static_cast<std::size_t>(trial) % meshes.size()];
    const std::size_t rank = 2 + static_cast<std::size_t>(trial % 2);
    std::vector<std::int64_t> shape;
    for (std::size_t d = 0; d < rank; ++d) shape.push_back(60 * (1 + static_cast<std::int64_t>(rng() % 2)));
    const std::string ss = random_spec(rank);
    const std::string ds = random_spec(rank);
    const auto p = problem(t, shape, sm, ss, dm, ds, plan::DType::bf16);
    ++problems;
    for (Strategy s : kMovingStrategies)
      for (Balance b : balances) {
        INFO(sm << " [" << ss << "] -> " << dm << " [" << ds << "] " << to_string(s) << " " << to_string(b));
        const auto plan = build_plan(t, p, unit_tasks(p), s, b);
        const auto check = runtime::verify_on_host(plan);
        CHECK(check.ok);
        if (!check.mismatches.empty()) FAIL_CHECK(check.mismatches.front().describe());
      }
  }
  CHECK(problems == 12);
}

TEST_CASE("overlapping meshes: receivers that hold a slice copy it locally, the rest is moved",
          "[reshard][verify][whole-study]") {
  // Every pair of rank-2 specs (the 11 types of a 2 x 4 mesh) between
  // identical meshes, meshes sharing one host, and a mesh inside another;
  // every moving strategy under two balancing modes.
  const auto& t = alpa_cluster();
  std::vector<std::string> specs;
  for (const auto& s : redistribute::all_types({8, 16}, redistribute::Axes{2, 4})) specs.push_back(s.str());
  REQUIRE(specs.size() == 11);
  const std::pair<const char*, const char*> meshes[] = {
      {"hosts=0-1", "hosts=0-1"}, {"hosts=0-1", "hosts=1-2"}, {"hosts=0-1", "hosts=1,gpus=0-1,shape=2x1"}};
  int local = 0;
  for (const auto& [sm, dm] : meshes)
    for (const auto& ss : specs)
      for (const auto& ds : specs) {
        const auto p = problem(t, {8, 16}, sm, ss, dm, ds);
        const auto tasks = unit_tasks(p);
        for (const auto& u : tasks) local += static_cast<int>(u.local.size());
        for (Strategy s : kMovingStrategies)
          for (Balance b : {Balance::none, Balance::host_order}) {
            INFO(sm << " [" << ss << "] -> " << dm << " [" << ds << "] " << to_string(s) << " "
                    << to_string(b));
            const auto check = runtime::verify_on_host(build_plan(t, p, tasks, s, b));
            CHECK(check.ok);
            CHECK(check.buffers_checked == p.dst.size());
            if (!check.mismatches.empty()) FAIL_CHECK(check.mismatches.front().describe());
          }
      }
  CHECK(local > 0);
}
