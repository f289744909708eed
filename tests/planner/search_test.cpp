// Parallel-strategy search: the space it enumerates, its memory filter and
// its determinism across threads.

#include "planner/search/search.h"

#include <catch2/catch.hpp>

#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::planner;
using namespace meshsim::planner::search;

namespace {

topology::Topology cluster(const char* preset, int hosts) {
  topology::ClusterSpec cs;
  cs.host_preset = preset;
  cs.hosts = hosts;
  return topology::build_cluster(cs);
}

// GPT-3 13B on 4 DGX-A100 (32 GPUs of 40 GiB), batch 64, microbatch sizes 1 and 2.
struct Gpt13b {
  topology::Topology t = cluster("dgx-a100", 4);
  Model m = gpt_model("gpt3-13b", 40, 5120, 40, 2048, 51200);
  Space s;
  Options o;
  Gpt13b() {
    s.global_batch = 64;
    s.microbatch_sizes = {1, 2};
    o.memory_capacity = 40.0 * (1 << 30);
  }
};

}  // namespace

TEST_CASE("search space: splits that fill the GPUs, tp inside a host, microbatch sizes that divide",
          "[search]") {
  // 2 x p3.8xlarge (8 GPUs, 4 per host), 24 layers, batch 8, sizes {1, 2}:
  //   tp 1: pp 1, 2, 4, 8 -> dp 8, 4, 2, 1, replica batch 1, 2, 4, 8 -> 1 + 2 + 2 + 2 = 7
  //   tp 2: pp 1, 2, 4    -> dp 4, 2, 1, replica batch 2, 4, 8       -> 6
  //   tp 4: pp 1, 2       -> dp 2, 1                                  -> 4
  // 17 in all; tp 8 across the hosts adds pp 1, dp 1: 2 more.
  const auto t = cluster("p3.8xlarge", 2);
  const Model m = gpt_model("m", 24, 1024, 16, 512, 1000);
  Space s;
  s.global_batch = 8;
  s.microbatch_sizes = {1, 2};
  const auto configs = enumerate(s, m, t);
  CHECK(configs.size() == 17);
  for (const auto& c : configs) {
    CHECK(c.dp * c.tp * c.pp == 8);
    CHECK(c.tp <= 4);
    CHECK(c.dp * c.microbatches * c.microbatch_size == 8);
  }
  s.tp_across_hosts = true;
  CHECK(enumerate(s, m, t).size() == 19);
  // Two schedules, interleaved with 2 and 3 virtual stages: 17 x (1 + 2).
  s.tp_across_hosts = false;
  s.schedules = {Schedule::one_f_one_b, Schedule::interleaved_1f1b};
  s.virtual_stages = {2, 3};
  CHECK(enumerate(s, m, t).size() == 17 * 3);
  s.gpus = 9;
  CHECK_THROWS_AS(enumerate(s, m, t), UsageError);
}

TEST_CASE(
    "search: the memory filter drops exactly the configurations over capacity, and threads do not "
    "change the results",
    "[search]") {
  // Small splits cannot hold 13B parameters' training state (16 B each:
  // 208 GB).
  Gpt13b g;
  auto& [t, m, s, o] = g;
  const auto configs = enumerate(s, m, t);
  const auto one = run(configs, m, t, o);
  o.threads = 2;
  const auto two = run(configs, m, t, o);
  CHECK(results_csv(one) == results_csv(two));
  int simulated = 0, filtered = 0;
  for (const Result& r : one) {
    if (r.status == Status::out_of_memory) {
      ++filtered;
      CHECK(r.peak_memory_bytes > o.memory_capacity);
    } else if (r.status == Status::simulated) {
      ++simulated;
      // The estimate the filter used is the built iteration's own.
      double built = 0;
      for (const DeviceMemory& d : build_pipeline(m, t, r.config).memory) built = std::max(built, d.total());
      CHECK(built == r.peak_memory_bytes);
      CHECK(r.peak_memory_bytes <= o.memory_capacity);
      CHECK(r.metrics.iteration_s > 0);
    }
  }
  CHECK(simulated > 0);
  CHECK(filtered > 0);
  // dp 32 keeps all 13B parameters on every GPU: filtered.
  for (const Result& r : one)
    if (r.config.dp == 32) CHECK(r.status == Status::out_of_memory);
  const auto order = ranking(one);
  REQUIRE(!order.empty());
  for (std::size_t k = 1; k < order.size(); ++k)
    CHECK(one[order[k - 1]].metrics.iteration_s <= one[order[k]].metrics.iteration_s);
}

TEST_CASE("search: with tensor parallelism across hosts allowed, the best configurations keep it inside",
          "[search]") {
  // GPT-3 13B on 4 DGX-A100 over 8 x 200 Gb/s InfiniBand per host: a
  // tensor-parallel all-reduce per layer over the network costs far more
  // than over NVSwitch, so no top-5 configuration has tp > 8.
  Gpt13b g;
  auto& [t, m, s, o] = g;
  s.tp_across_hosts = true;
  o.threads = 2;
  const auto results = run(enumerate(s, m, t), m, t, o);
  const auto order = ranking(results);
  REQUIRE(order.size() >= 5);
  bool across = false;
  for (const Result& r : results) across = across || (r.config.tp > 8 && r.status == Status::simulated);
  CHECK(across);                                                                // some were simulated...
  for (std::size_t k = 0; k < 5; ++k) CHECK(results[order[k]].config.tp <= 8);  // ...and lost
}
