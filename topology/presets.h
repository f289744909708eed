#pragma once
// Host presets: the internal link structure of real GPU machines
// (reference/hardware.md §2), and the link parameters we give them.
//
// Link parameters (per direction; efficiency = achieved / line rate):
//   NVLink 2/3  25 GB/s per link, efficiency 0.80 (NCCL models 20 GB/s per link)
//   NVLink 4    25 GB/s per link, efficiency 0.824 (20.6 GB/s per link)
//   PCIe        1 / 2 / 4 GB/s per lane for Gen3 / Gen4 / Gen5, efficiency
//               0.75 (NCCL models 12 / 24 / 48 GB/s for x16)
//   smp         CPU socket interconnect, 20 GB/s, efficiency 0.75
//   latency     NVLink 500 ns per hop (GPU→NVSwitch→GPU = 1 µs),
//               PCIe 250 ns per hop, smp 300 ns
// NVSwitch machines are modelled with one logical NVSwitch node per host
// that stands for all of the host's NVSwitch chips: each GPU joins it with
// all its NVLink links (12 on A100, 18 on H100) as one link of that count,
// which is how NVSwitch spreads a GPU's traffic over every chip.
//
// Each preset also carries its NIC defaults (used by the cluster builder for
// the NIC↔fabric links): rate, latency per NIC↔switch hop and efficiency.

#include <span>
#include <string>
#include <string_view>

#include "core/units.h"
#include "topology/topology.h"

namespace meshsim::topology {

struct HostPreset {
  std::string_view name;
  std::string_view summary;
  int gpus = 0;
  std::string_view gpu_model;
  int nics = 0;
  Bandwidth nic_bandwidth;  // per NIC, per direction
  Time nic_latency;         // NIC↔switch hop
  double nic_efficiency = 1.0;
  void (*build)(Topology& t, int host) = nullptr;
};

[[nodiscard]] std::span<const HostPreset> host_presets();
/// nullptr when there is no preset of that name.
[[nodiscard]] const HostPreset* find_host_preset(std::string_view name);
/// Comma-separated preset names, for messages and --help.
[[nodiscard]] std::string host_preset_names();

/// Adds one host built from `p` (named "h<index>") with its GPUs, switches,
/// CPUs and NICs; NICs are left unconnected (the fabric joins them).
int add_preset_host(Topology& t, const HostPreset& p);

}  // namespace meshsim::topology
