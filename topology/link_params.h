#pragma once
// Link parameters shared by everything that builds host internals (the host
// presets and the NCCL topology importer), so that a preset and an import
// of the same machine get the same numbers. Figures are per direction;
// efficiency = achieved / line rate, set to NCCL's model.
//
//   NVLink   per lane, by GPU generation (hardware/nvlink.h); latency
//            500 ns per hop (GPU→NVSwitch→GPU = 1 µs)
//   PCIe     line rate per lane 250 MB/s × 2^(gen−1): Gen3 ≈ 1 GB/s, Gen4
//            2, Gen5 4, Gen6 8 GB/s; efficiency 0.75, which is exactly
//            NCCL's model for every generation (12 / 24 / 48 GB/s for a
//            Gen3 / Gen4 / Gen5 x16 link); latency 250 ns per hop. A PCIe
//            link is one lane-group: bandwidth = per-lane rate × width,
//            count = 1.
//   smp      the CPU socket interconnect (QPI/UPI, xGMI, X-bus): 20 GB/s by
//            default (one UPI link at 10.4 GT/s ≈ 20.8 GB/s), efficiency
//            0.75, latency 300 ns.

#include <string_view>

#include "core/units.h"
#include "hardware/nvlink.h"
#include "topology/topology.h"

namespace meshsim::topology {

inline constexpr Time kNvlinkLatency = Time::ns(500);
inline constexpr Time kPcieLatency = Time::ns(250);
inline constexpr double kPcieEfficiency = 0.75;
inline constexpr Bandwidth kSmpBandwidth = Bandwidth::GBps(20);
inline constexpr Time kSmpLatency = Time::ns(300);
inline constexpr double kSmpEfficiency = 0.75;

/// PCIe line rate per lane for generation 1..6 (InternalError otherwise).
[[nodiscard]] Bandwidth pcie_lane_rate(int gen);

[[nodiscard]] Link nvlink_link(NodeId a, NodeId b, int lanes, const hardware::NvlinkGeneration& g);
[[nodiscard]] Link pcie_link(NodeId a, NodeId b, int gen, int width);
[[nodiscard]] Link smp_link(NodeId a, NodeId b, Bandwidth rate = kSmpBandwidth);

}  // namespace meshsim::topology
