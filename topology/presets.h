#pragma once
// Host presets as graphs: each machine of the catalogue (hardware/hosts.h:
// its GPUs, layout, PCIe and NICs) built into nodes and links, with the
// link parameters we give them.
//
// Link parameters (NVLink per GPU generation, PCIe per generation and
// width, the CPU socket link, latencies) come from topology/link_params.h,
// which the NCCL topology importer shares: NVLink 2 and 3 lanes are 25 GB/s
// at efficiency 0.80, NVLink 4 lanes 25 GB/s at 0.824; PCIe Gen3/4/5 x16 is
// 16/32/64 GB/s at 0.75; smp 20 GB/s at 0.75.
// NVSwitch machines are modelled with one logical NVSwitch node per host
// that stands for all of the host's NVSwitch chips: each GPU joins it with
// all its NVLink links (the catalogue's nvlink_lanes) as one link of that
// count, which is how NVSwitch spreads a GPU's traffic over every chip.

#include "hardware/hosts.h"
#include "topology/topology.h"

namespace meshsim::topology {

/// Adds one host built from `p` (named "h<index>") with its GPUs, switches,
/// CPUs and NICs; NICs are left unconnected (the fabric joins them).
int add_preset_host(Topology& t, const hardware::HostPreset& p);

}  // namespace meshsim::topology
