#include "topology/link_params.h"

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::topology {

Bandwidth pcie_lane_rate(int gen) {
  MESHSIM_ASSERT(gen >= 1 && gen <= 6, fmt::format("PCIe generation {} is not 1..6", gen));
  // Gen1 2.5 GT/s with 8b/10b = 250 MB/s per lane; each generation doubles
  // (Gen3's 128b/130b at 8 GT/s ≈ 985 MB/s is counted as 1 GB/s).
  return Bandwidth::bytes_per_second(250'000'000) * (std::int64_t{1} << (gen - 1));
}

Link nvlink_link(NodeId a, NodeId b, int lanes, const hardware::NvlinkGeneration& g) {
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
