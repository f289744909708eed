#include "topology/presets.h"

#include <set>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "hardware/hosts.h"
#include "tests/topology/test_util.h"
#include "topology/link_params.h"

using namespace meshsim;
using namespace meshsim::topology;
using namespace meshsim::topology::test;

TEST_CASE("p3.16xlarge has the exact hybrid cube-mesh NV1/NV2 matrix", "[presets]") {
  // The DGX-1 / p3.16xlarge NVLink layout: NV2 pairs 0-3 0-4 1-2 1-5 2-3 4-7 5-6 6-7;
  // NV1 pairs 0-1 0-2 1-3 2-6 3-7 4-5 4-6 5-7; every other pair has none.
  const Topology t = cluster("p3.16xlarge");
  const int expected[8][8] = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
                              {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                              {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) {
        INFO("gpu" << a << " - gpu" << b);
        CHECK(nvlink_lanes(t, fmt::format("h0/gpu{}", a), fmt::format("h0/gpu{}", b)) == expected[a][b]);
      }
  // Each V100 uses all 6 of its NVLink 2 links.
  for (int a = 0; a < 8; ++a) {
    int lanes = 0;
    for (int b = 0; b < 8; ++b) lanes += expected[a][b];
    CHECK(lanes == 6);
  }
  CHECK(t.node(t.gpus()[0]).model == "V100");
}

TEST_CASE("p3.8xlarge is one quad of the cube mesh", "[presets]") {
  // 0-3, 1-2, 2-3 NV2; 0-1, 0-2, 1-3 NV1.
  const Topology t = cluster("p3.8xlarge");
  CHECK(t.gpus().size() == 4);
  CHECK(nvlink_lanes(t, "h0/gpu0", "h0/gpu3") == 2);
  CHECK(nvlink_lanes(t, "h0/gpu1", "h0/gpu2") == 2);
  CHECK(nvlink_lanes(t, "h0/gpu2", "h0/gpu3") == 2);
  CHECK(nvlink_lanes(t, "h0/gpu0", "h0/gpu1") == 1);
  CHECK(nvlink_lanes(t, "h0/gpu0", "h0/gpu2") == 1);
  CHECK(nvlink_lanes(t, "h0/gpu1", "h0/gpu3") == 1);
  CHECK(t.host_nics(0).size() == 1);
}

TEST_CASE("NVSwitch presets give every GPU all its NVLink lanes", "[presets]") {
  // A100: 12 NVLink 3 lanes per GPU; H100/H200: 18 NVLink 4 lanes.
  struct Case {
    const char* preset;
    int lanes;
    std::size_t nics;
    const char* model;
  };
  for (const Case c : {Case{"p4d.24xlarge", 12, 4, "A100"}, Case{"dgx-a100", 12, 8, "A100"},
                       Case{"dgx-a100-80gb", 12, 8, "A100-80GB"}, Case{"dgx-h100", 18, 8, "H100"},
                       Case{"dgx-h200", 18, 8, "H200"}}) {
    INFO(c.preset);
    const Topology t = cluster(c.preset);
    REQUIRE(t.gpus().size() == 8);
    for (NodeId g : t.gpus()) {
      CHECK(nvlink_lanes(t, t.node(g).name, "h0/nvswitch") == c.lanes);
      CHECK(t.node(g).model == c.model);
    }
    CHECK(t.host_nics(0).size() == c.nics);
  }
}

TEST_CASE("NICs sit next to their GPUs as in the real machines", "[presets]") {
  // DGX-A100: two GPUs and two NICs per PCIe switch -> GPU k uses NIC k.
  // DGX-H100: GPU k and NIC k share a PCIe Gen5 switch -> GPU k uses NIC k.
  for (const char* preset : {"dgx-a100", "dgx-h100"}) {
    INFO(preset);
    const Topology t = cluster(preset);
    for (int k = 0; k < 8; ++k)
      CHECK(t.node(*t.nic_of(t.at(fmt::format("h0/gpu{}", k)))).name == fmt::format("h0/nic{}", k));
  }
  // p4d: four NICs, one per PCIe switch of two GPUs -> GPUs 2k and 2k+1 share NIC k.
  const Topology p4d = cluster("p4d.24xlarge");
  for (int k = 0; k < 8; ++k)
    CHECK(p4d.node(*p4d.nic_of(p4d.at(fmt::format("h0/gpu{}", k)))).name == fmt::format("h0/nic{}", k / 2));
  // p3: one NIC for all GPUs.
  const Topology p3 = cluster("p3.16xlarge");
  for (NodeId g : p3.gpus()) CHECK(p3.node(*p3.nic_of(g)).name == "h0/nic0");
}

TEST_CASE("PCIe generations and NIC rates follow the reference", "[presets]") {
  auto pcie_gens = [](const Topology& t) {
    std::set<int> gens;
    for (const Link& l : t.links())
      if (l.kind == LinkKind::pcie) gens.insert(l.pcie_gen);
    return gens;
  };
  CHECK(pcie_gens(cluster("p3.16xlarge")) == std::set<int>{3});
  CHECK(pcie_gens(cluster("dgx-a100")) == std::set<int>{4});
  CHECK(pcie_gens(cluster("dgx-h100")) == std::set<int>{5});
  // Gen4 x16 = 32 GB/s line rate, 24 GB/s effective (NCCL's figure).
  const Topology a100 = cluster("dgx-a100");
  for (const Link& l : a100.links())
    if (l.kind == LinkKind::pcie) {
      CHECK(l.line_rate() == Bandwidth::GBps(32));
      CHECK(l.capacity() == Bandwidth::GBps(24));
    }
  CHECK(hardware::find_host_preset("dgx-h100")->nic_bandwidth == Bandwidth::Gbps(400));
  CHECK(hardware::find_host_preset("dgx-a100")->nic_bandwidth == Bandwidth::Gbps(200));
  CHECK(hardware::find_host_preset("p3.8xlarge")->nic_bandwidth == Bandwidth::Gbps(10));
  CHECK(hardware::find_host_preset("p3.16xlarge")->nic_bandwidth == Bandwidth::Gbps(25));
  CHECK(hardware::find_host_preset("nope") == nullptr);
}

TEST_CASE("Shared link parameters reproduce NCCL's link model", "[presets]") {
  // PCIe line rate per lane 250 MB/s x 2^(gen-1); at efficiency 0.75 an x16
  // link gives NCCL's model: Gen1 3, Gen2 6, Gen3 12, Gen4 24, Gen5 48, Gen6 96 GB/s.
  const std::int64_t nccl_x16_GBps[] = {3, 6, 12, 24, 48, 96};
  for (int gen = 1; gen <= 6; ++gen) {
    INFO("Gen" << gen);
    const Link l = pcie_link(0, 1, gen, 16);
    CHECK(l.line_rate() == Bandwidth::bytes_per_second(250'000'000) * 16 * (std::int64_t{1} << (gen - 1)));
    CHECK(l.capacity() == Bandwidth::GBps(nccl_x16_GBps[gen - 1]));
  }
}
