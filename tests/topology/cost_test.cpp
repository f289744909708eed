#include "topology/cost.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/json.h"
#include "tests/topology/test_util.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::topology;
using Catch::Matchers::Contains;

namespace {
Topology h100_tree(int hosts, double oversubscription) {
  ClusterSpec s;
  s.host_preset = "dgx-h100";
  s.hosts = hosts;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.oversubscription = oversubscription;
  return build_cluster(s);
}
}  // namespace

TEST_CASE("a job pays for its GPUs' hours at the preset's price", "[cost]") {
  const Topology t = h100_tree(16, 1);
  const JobCost c = job_cost(t, 32);
  // 32 GPUs on 4 hosts; dgx-h100's price is AWS p5's, $55.04/h for 8 = $6.88.
  CHECK(c.gpus == 32);
  CHECK(c.hosts == 4);
  REQUIRE(c.usd_per_gpu_hour);
  CHECK(*c.usd_per_gpu_hour == Approx(6.88));
  CHECK_THAT(c.price_source, Contains("p5.48xlarge"));
  CHECK(*c.usd(Time::s(3600)) == Approx(32 * 6.88));
  // Rated power: 4 DGX H100 at 10.2 kW; no switch figure, so no fabric.
  CHECK(c.host_watts == Approx(4 * 10200.0));
  CHECK(c.fabric_watts == 0);
  CHECK_THAT(c.power_basis, Contains("switches not counted"));
  CHECK(c.joules(Time::s(10)) == Approx(408000.0));
  CHECK_THROWS_WITH(job_cost(t, 129), Contains("a job of 129 GPUs"));
}

TEST_CASE("the fabric's power is shared per switch port, and the job carries its hosts' share", "[cost]") {
  Topology t = h100_tree(16, 1);
  t.costs.switch_watts = 1000;
  // 128 NICs, 32 per leaf: 4 leaves; 32 spines, one NIC-rate lane from each
  // leaf to each. Leaves take 32 + 32 ports, spines 4: 4·64 + 32·4 = 384
  // QM9700 ports of 64, at 1000/64 W each = 6000 W.
  CHECK(fabric_watts(t) == Approx(6000.0));
  CHECK(job_cost(t, 32).fabric_watts == Approx(6000.0 * 4 / 16));
  // 2:1: 16 spines, still one lane per leaf-spine pair: 4·(32 + 16) + 16·4 = 256 ports.
  Topology over = h100_tree(16, 2);
  over.costs.switch_watts = 1000;
  CHECK(fabric_watts(over) == Approx(4000.0));
  // A rate above the port's takes ⌈rate / port⌉ ports: with 5 spines at 1:1
  // each leaf-spine link is one link of 6.4 NIC rates, 7 ports at each end.
  ClusterSpec s;
  s.host_preset = "dgx-h100";
  s.hosts = 16;
  s.fabric.kind = FabricKind::fat_tree;
  s.fabric.spines = 5;
  Topology five = build_cluster(s);
  five.costs.switch_watts = 64;  // 1 W per port
  CHECK(fabric_watts(five) == Approx(4 * (32 + 5 * 7) + 5 * 4 * 7));
}

TEST_CASE("given figures replace the presets', and a host without a system figure counts its parts",
          "[cost]") {
  Topology t = h100_tree(2, 1);
  t.costs.gpu_hour_usd = 2.5;
  t.costs.host_watts = 9000;
  const JobCost c = job_cost(t, 16);
  CHECK(*c.usd_per_gpu_hour == 2.5);
  CHECK(c.price_source == "as given");
  CHECK(c.host_watts == Approx(18000.0));
  // A hand-written host: 2 H100 (700 W each) and a 400G NIC (ConnectX-7, 24.9 W)
  // on a switch of no model, which with switch_watts counts whole.
  const Json j = parse_json_text(R"({"format": "meshsim.topology/1", "switch_watts": 500,
    "hosts": [{"name": "h0"}],
    "nodes": [{"name": "h0/gpu0", "kind": "gpu", "host": "h0", "model": "H100"},
              {"name": "h0/gpu1", "kind": "gpu", "host": "h0", "model": "H100"},
              {"name": "h0/nic0", "kind": "nic", "host": "h0"},
              {"name": "sw", "kind": "switch"}],
    "links": [{"kind": "nvlink", "a": "h0/gpu0", "b": "h0/gpu1", "bandwidth": "25GBps", "count": 18, "latency": "1us"},
              {"kind": "pcie", "a": "h0/gpu0", "b": "h0/nic0", "bandwidth": "64GBps", "latency": "1us"},
              {"kind": "network", "a": "h0/nic0", "b": "sw", "bandwidth": "400Gbps", "latency": "1us"}]})",
                                 "hand.json");
  const Topology hand = topology_from_json(j, "hand.json");
  const JobCost h = job_cost(hand, 2);
  CHECK(h.host_watts == Approx(2 * 700 + 24.9));
  CHECK_THAT(h.power_basis, Contains("GPUs and NICs only"));
  CHECK(h.fabric_watts == Approx(500.0));
  CHECK_FALSE(h.usd_per_gpu_hour);
  CHECK_FALSE(h.usd(Time::s(1)));
}

TEST_CASE("a step's cost per million tokens divides by the tokens it trains", "[cost]") {
  JobCost c;
  c.gpus = 8;
  c.usd_per_gpu_hour = 3.6;  // $0.001 per GPU-second
  c.host_watts = 3600;       // 1 Wh per second
  const StepCost s = step_cost(c, Time::s(2), 4e5);
  CHECK(*s.usd_per_step == Approx(8 * 0.001 * 2));
  CHECK(*s.usd_per_million_tokens == Approx(8 * 0.001 * 2 * 2.5));
  CHECK(s.kwh_per_step == Approx(0.002));
  CHECK(*s.kwh_per_million_tokens == Approx(0.005));
  CHECK_FALSE(step_cost(c, Time::s(2), 0).usd_per_million_tokens);
}

TEST_CASE("topology files carry prices, watts and switch models, and refuse bad ones", "[cost]") {
  const Json j = parse_json_text(R"({"format": "meshsim.topology/1", "price_per_gpu_hour": 4.5,
    "host_watts": 9000, "switch_watts": 700,
    "cluster": {"host": "dgx-h100", "hosts": 2, "switch": "Q3400"}})",
                                 "c.json");
  const Topology t = topology_from_json(j, "c.json");
  CHECK(*t.costs.gpu_hour_usd == 4.5);
  CHECK(*t.costs.host_watts == 9000);
  CHECK(*t.costs.switch_watts == 700);
  CHECK(t.node(t.at("switch0")).model == "Q3400");
  const Topology back = topology_from_json(topology_to_json(t), "back.json");
  CHECK(*back.costs.gpu_hour_usd == 4.5);
  CHECK(back.node(back.at("switch0")).model == "Q3400");
  // The preset's switch when none is named.
  CHECK(test::cluster("dgx-a100", 2).node(test::cluster("dgx-a100", 2).at("switch0")).model == "QM8700");
  auto load = [](const char* text) {
    return topology_from_json(parse_json_text(text, "bad.json"), "bad.json");
  };
  CHECK_THROWS_WITH(load(R"({"format": "meshsim.topology/1", "price_per_gpu_hour": -1,
    "cluster": {"host": "dgx-h100", "hosts": 1}})"),
                    Contains("price_per_gpu_hour") && Contains("out of range"));
  CHECK_THROWS_WITH(load(R"({"format": "meshsim.topology/1",
    "cluster": {"host": "dgx-h100", "hosts": 2, "switch": "QM9999"}})"),
                    Contains("cluster.switch") && Contains("unknown switch model \"QM9999\""));
}
