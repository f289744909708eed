// Adding a GPU is one catalogue entry: a model registered with
// hardware::add_gpu is read by the topology (its NVLink generation, the
// NCCL dump importer's sm), the collective table (its NCCL architecture:
// NVLS, tree limits), the simulator's compute model (its peaks) and the
// runtime's device-name lookup, with nothing else added anywhere.

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "hardware/gpus.h"
#include "hardware/nvlink.h"
#include "plan/collective.h"
#include "plan/plan.h"
#include "sim/compute_model.h"
#include "sim/executor.h"
#include "topology/link_params.h"
#include "topology/nccl_xml.h"
#include "topology/topology.h"

using namespace meshsim;

namespace {

// A made-up Blackwell-class part: sm 120, 2,000 TFLOP/s FP16, 8 TB/s.
const hardware::GpuSpec& x900() {
  static const hardware::GpuSpec& g = [] {
    hardware::GpuSpec s;
    s.name = "X900";
    s.sm = 120;
    s.nccl_arch = hardware::NcclArch::blackwell;
    s.peaks = {100e12, 2000e12, 50e12, 4000e12};
    s.memory = Bytes::GiB(192);
    s.memory_bandwidth = Bandwidth::GBps(8000);
    s.sms = 160;
    s.nvlink_lanes = 18;
    s.sm_default = true;
    s.driver_names = {"X900", {}};
    s.source = "a test";
    return std::cref(hardware::add_gpu(s));
  }();
  return g;
}

// One host of eight X900s, each with all its NVLink lanes to one NVSwitch.
topology::Topology x900_host() {
  using namespace topology;
  const hardware::GpuSpec& g = x900();
  Topology t;
  t.name = "x900-host";
  t.add_host(Host{"h0", ""});
  const NodeId nvs = t.add_node(Node{"h0/nvswitch", NodeKind::nvswitch, 0, {}});
  for (int i = 0; i < 8; ++i) {
    const NodeId gpu = t.add_node(Node{fmt::format("h0/gpu{}", i), NodeKind::gpu, 0, std::string(g.name)});
    t.add_link(nvlink_link(gpu, nvs, g.nvlink_lanes, hardware::nvlink_generation(g.sm)));
  }
  return t;
}

}  // namespace

TEST_CASE("a GPU added to the catalogue reaches every layer", "[hardware]") {
  const topology::Topology t = x900_host();

  // Topology: sm 120 takes NVLink 5's lanes (50 GB/s each); an NCCL dump's
  // sm 120 imports as an X900.
  const topology::Link& l = t.link(0);
  CHECK(l.bandwidth == Bandwidth::GBps(50));
  CHECK(l.count == 18);
  CHECK(topology::gpu_model_for_sm(120) == "X900");

  // The collective table: Blackwell's rows of NCCL's tuning model. NVLS at
  // 0.74 of the link; a tree channel at 70 GB/s of bus bandwidth in one
  // host, i.e. 35 GB/s of data.
  CHECK(plan::nvls_capable_model("X900"));
  CHECK(plan::nvls_efficiency("X900") == 0.74);
  CHECK(plan::tree_channel_limit("X900", 1) == Bandwidth::GBps(35));

  // The simulator: a 1 GiB all-reduce over the eight GPUs runs on NVLink
  // SHARP, as on an H100 host; 2e15 FP16 FLOPs take 1 s at the X900's peak
  // (+ the 4 us launch).
  plan::Plan p;
  p.name = "x900";
  for (int i = 0; i < 8; ++i) p.devices.push_back(fmt::format("h0/gpu{}", i));
  plan::Task ar;
  ar.id = "ar";
  ar.kind = plan::TaskKind::collective;
  ar.op = plan::CollectiveOp::all_reduce;
  for (std::size_t i = 0; i < 8; ++i) ar.devices.push_back(i);
  ar.size = Bytes::GiB(1);
  p.tasks.push_back(ar);
  plan::Task mm;
  mm.id = "mm";
  mm.kind = plan::TaskKind::compute;
  mm.devices = {0};
  mm.flops = 2e15;
  mm.dtype = plan::DType::bf16;
  mm.stream = 1;
  p.tasks.push_back(mm);
  const sim::SimResult r = sim::simulate(p, t);
  CHECK(r.collectives[0].algorithm == plan::Algorithm::nvls);
  CHECK(r.tasks[1].end - r.tasks[1].start == Time::s(1) + Time::us(4));
  const sim::DeviceModel* dm = sim::find_device_model("X900");
  REQUIRE(dm != nullptr);
  CHECK(dm->memory_capacity == Bytes::GiB(192));
  CHECK(dm->sms == 160);

  // The runtime's lookup of the driver's device name.
  CHECK(hardware::gpu_for_device_name("NVIDIA X900 SXM")->name == "X900");
  CHECK(hardware::modelled_gpu_names().ends_with(", X900"));
}
