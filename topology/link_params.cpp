#include "topology/link_params.h"

#include <array>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::topology {

namespace {

// Line rates are the vendors' per-link figures; efficiencies turn them into
// NCCL's per-link model (src/graph/topo.h, SM*_NVLINK_BW), as the presets do.
constexpr std::array kNvlinkGenerations{
    NvlinkGeneration{60, "NVLink 1", Bandwidth::GBps(20), 0.90},
    NvlinkGeneration{70, "NVLink 2", Bandwidth::GBps(25), 0.80},
    NvlinkGeneration{80, "NVLink 3", Bandwidth::GBps(25), 0.80},
    // GA102 (A40, RTX 3090) bridges: 4 links, 112.5 GB/s both directions.
    NvlinkGeneration{86, "NVLink 3 (GA102 bridge)", Bandwidth::bytes_per_second(14'062'500'000), 0.853},
    NvlinkGeneration{90, "NVLink 4", Bandwidth::GBps(25), 0.824},
    NvlinkGeneration{100, "NVLink 5", Bandwidth::GBps(50), 0.802},
};

}  // namespace

const NvlinkGeneration& nvlink_generation(int sm) {
  const NvlinkGeneration* best = &kNvlinkGenerations.front();
  for (const NvlinkGeneration& g : kNvlinkGenerations)
    if (g.min_sm <= sm) best = &g;
  return *best;
}

Bandwidth pcie_lane_rate(int gen) {
  MESHSIM_ASSERT(gen >= 1 && gen <= 6, fmt::format("PCIe generation {} is not 1..6", gen));
  // Gen1 2.5 GT/s with 8b/10b = 250 MB/s per lane; each generation doubles
  // (Gen3's 128b/130b at 8 GT/s ≈ 985 MB/s is counted as 1 GB/s).
  return Bandwidth::bytes_per_second(250'000'000) * (std::int64_t{1} << (gen - 1));
}

Link nvlink_link(NodeId a, NodeId b, int lanes, const NvlinkGeneration& g) {
  return Link{LinkKind::nvlink, a, b, g.lane, lanes, kNvlinkLatency, g.efficiency, 0, 0};
}

Link pcie_link(NodeId a, NodeId b, int gen, int width) {
  return Link{LinkKind::pcie,  a,   b,    pcie_lane_rate(gen) * width, 1, kPcieLatency,
              kPcieEfficiency, gen, width};
}

Link smp_link(NodeId a, NodeId b, Bandwidth rate) {
  return Link{LinkKind::smp, a, b, rate, 1, kSmpLatency, kSmpEfficiency, 0, 0};
}

}  // namespace meshsim::topology
