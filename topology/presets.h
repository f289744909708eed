#pragma once
// Host presets: the internal link structure of real GPU machines
// (their published NVLink, PCIe and NIC layouts), and the link parameters we
// give them.
//
// Link parameters (NVLink per GPU generation, PCIe per generation and
// width, the CPU socket link, latencies) come from topology/link_params.h,
// which the NCCL topology importer shares: V100 NVLink 2 and A100 NVLink 3
// lanes are 25 GB/s at efficiency 0.80, H100/H200 NVLink 4 lanes 25 GB/s at
// 0.824; PCIe Gen3/4/5 x16 is 16/32/64 GB/s at 0.75; smp 20 GB/s at 0.75.
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
