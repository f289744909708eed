#include "hardware/hosts.h"

#include <set>
#include <string>

#include <catch2/catch.hpp>

using namespace meshsim;
using namespace meshsim::hardware;

TEST_CASE("every host preset is named once and can be wired as its layout says", "[hardware]") {
  // Each preset's GPU is a catalogue model with NVLink lanes; its PCIe
  // switches share out its GPUs and NICs evenly; its NICs have a rate and
  // a latency, and an efficiency in (0, 1].
  std::set<std::string> names;
  for (const HostPreset& p : host_presets()) {
    INFO(p.name);
    CHECK(names.insert(std::string(p.name)).second);
    REQUIRE(p.gpu != nullptr);
    CHECK(find_gpu(p.gpu->name) == p.gpu);
    CHECK(p.gpu->nvlink_lanes > 0);
    CHECK(p.pcie_switches > 0);
    CHECK(p.gpus % p.pcie_switches == 0);
    if (p.layout == HostLayout::nvswitch) CHECK(p.nics % p.pcie_switches == 0);
    if (p.layout == HostLayout::cube_mesh_quad) CHECK(p.gpus == 4);
    if (p.layout == HostLayout::cube_mesh) CHECK(p.gpus == 8);
    CHECK(p.nics > 0);
    CHECK(p.nic_bandwidth.bps() > 0);
    CHECK(p.nic_latency > Time::zero());
    CHECK(p.nic_efficiency > 0);
    CHECK(p.nic_efficiency <= 1);
    CHECK(!p.summary.empty());
  }
  CHECK(find_host_preset("dgx-h100")->gpu == &kH100);
  CHECK(find_host_preset("nope") == nullptr);
  CHECK(host_preset_names() ==
        "p3.8xlarge, p3.16xlarge, p4d.24xlarge, dgx-a100, dgx-a100-80gb, dgx-h100, dgx-h200, dgx-b200, "
        "dgx-b300, gb200-nvl72");
}
