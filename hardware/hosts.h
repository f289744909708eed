#pragma once
// The catalogue of host presets: real GPU machines, each once, with what it
// is built of (its GPUs, how they are wired, its PCIe and NICs) and its
// NIC defaults: rate, latency per NIC↔switch hop and efficiency (what the
// cluster builder gives the NIC↔fabric links). topology/presets.h builds
// each into a graph by its layout; adding a machine of a known layout is
// one entry in kHostPresets.
//
// Layouts:
//   cube_mesh_quad  4 GPUs, one quad of the hybrid cube mesh (NV2 and NV1
//                   pairs), one CPU, two PCIe switches of two GPUs each,
//                   the NIC on the CPU (AWS p3.8xlarge)
//   cube_mesh       8 GPUs in the hybrid cube mesh, two CPUs, four PCIe
//                   switches of two GPUs each, the NIC on CPU 0 (AWS
//                   p3.16xlarge, DGX-1V)
//   nvswitch        8 GPUs each with all its NVLink lanes to the NVSwitch
//                   fabric, two CPUs, `pcie_switches` PCIe switches of Gen
//                   `pcie_gen`, each holding 8/switches GPUs and
//                   nics/switches NICs (p4d, DGX A100, DGX H100, DGX H200, DGX B200, DGX B300;
//                   a GB200 NVL72 rack as one NVLink domain of 72 GPUs, its
//                   18 compute trays as 18 PCIe switches of 4 GPUs and 4 NICs,
//                   its 36 Grace CPUs as the two sockets, which only host
//                   memory traffic crosses)
//
// NIC defaults: AWS ENA is kernel TCP (≈ 50 µs end to end, 25 µs per NIC
// hop); EFA ≈ 15 µs; InfiniBand verbs ≈ 1.8 µs (0.9 µs per NIC hop).
// Efficiencies: HDR 24/25, NDR 47/50 (measured), TCP and EFA 0.9; XDR
// (ConnectX-8, 800 Gb/s, PCIe Gen6 x16: its firmware notes and manual) as
// NDR, not yet measured.
//
// Fabric switches: what InfiniBand generation the NICs run (QM8700 for HDR,
// QM9700 for NDR, Q3400 for XDR, hardware/network_parts.h); none for AWS's
// own fabric.
// System power, rated (the machines' user guides): DGX A100 6.5 kW, DGX
// H100 and H200 10.2 kW, DGX B200 14.3 kW; a GB200 NVL72 rack about 120 kW
// (published deployment figures: NVIDIA gives its power shelves' capacity,
// not its draw); AWS publishes none for its instances, and none was at hand
// for the DGX B300.
// Prices per GPU-hour: the public on-demand price of the instance with the
// same GPUs, each with its date (prices change; --gpu-hour-price).

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/units.h"
#include "hardware/gpus.h"

namespace meshsim::hardware {

enum class HostLayout : std::uint8_t { cube_mesh_quad, cube_mesh, nvswitch };

struct HostPreset {
  std::string_view name;
  std::string_view summary;  // one line naming the machine, its GPUs, its NVLink and its NICs
  int gpus = 0;
  const GpuSpec* gpu = nullptr;
  int nics = 0;
  Bandwidth nic_bandwidth;  // per NIC, per direction
  Time nic_latency;         // NIC↔switch hop
  double nic_efficiency = 1.0;
  HostLayout layout = HostLayout::nvswitch;
  int pcie_gen = 3;
  int pcie_switches = 0;          // nvswitch: PCIe switches
  std::string_view switch_model;  // the fabric switches a cluster of them is built with (network_parts.h)
  double system_watts = 0;        // the whole machine's rated power; 0: none published
  double gpu_hour_usd = 0;        // a public on-demand price per GPU-hour; 0: none
  std::string_view price_source;
};

inline constexpr std::array kHostPresets{
    HostPreset{"p3.8xlarge", "AWS p3.8xlarge: 4 x V100, NVLink 2 (one cube-mesh quad), 10 Gbps", 4, &kV100, 1,
               Bandwidth::Gbps(10), Time::us(25), 0.9, HostLayout::cube_mesh_quad, 3, 2, "", 0, 0, ""},
    HostPreset{"p3.16xlarge", "AWS p3.16xlarge / DGX-1V: 8 x V100, NVLink 2 hybrid cube-mesh, 25 Gbps", 8,
               &kV100, 1, Bandwidth::Gbps(25), Time::us(25), 0.9, HostLayout::cube_mesh, 3, 4, "", 0, 0, ""},
    HostPreset{"p4d.24xlarge", "AWS p4d.24xlarge: 8 x A100 40 GB on NVSwitch, 4 x 100 Gbps EFA", 8, &kA100, 4,
               Bandwidth::Gbps(100), Time::ns(7500), 0.9, HostLayout::nvswitch, 4, 4, "", 0, 2.74,
               "AWS p4d.24xlarge on-demand, us-east-1, from June 2025: $21.96/h for 8"},
    HostPreset{"dgx-a100", "NVIDIA DGX A100 320 GB: 8 x A100 40 GB on NVSwitch, 8 x 200 Gb/s HDR InfiniBand",
               8, &kA100, 8, Bandwidth::Gbps(200), Time::ns(900), 0.96, HostLayout::nvswitch, 4, 4, "QM8700",
               6500, 2.74,
               "AWS p4d.24xlarge (8 x A100 40 GB) on-demand, us-east-1, from June 2025: $21.96/h for 8"},
    HostPreset{"dgx-a100-80gb",
               "NVIDIA DGX A100 640 GB: 8 x A100 80 GB on NVSwitch, 8 x 200 Gb/s HDR InfiniBand", 8,
               &kA100_80GB, 8, Bandwidth::Gbps(200), Time::ns(900), 0.96, HostLayout::nvswitch, 4, 4,
               "QM8700", 6500, 1.79, "Lambda 8 x A100 80 GB SXM on-demand, 2024-25: $14.32/h for 8"},
    HostPreset{"dgx-h100", "NVIDIA DGX H100: 8 x H100 on NVSwitch (NVLink 4), 8 x 400 Gb/s NDR InfiniBand", 8,
               &kH100, 8, Bandwidth::Gbps(400), Time::ns(900), 0.94, HostLayout::nvswitch, 5, 8, "QM9700",
               10200, 6.88,
               "AWS p5.48xlarge (8 x H100) on-demand, us-east-1, from June 2025: $55.04/h for 8"},
    HostPreset{"dgx-h200", "NVIDIA DGX H200: 8 x H200 on NVSwitch (NVLink 4), 8 x 400 Gb/s NDR InfiniBand", 8,
               &kH200, 8, Bandwidth::Gbps(400), Time::ns(900), 0.94, HostLayout::nvswitch, 5, 8, "QM9700",
               10200, 7.91, "AWS p5en.48xlarge (8 x H200) on-demand, us-east-1, 2026: $63.30/h for 8"},
    HostPreset{"dgx-b200", "NVIDIA DGX B200: 8 x B200 on NVSwitch (NVLink 5), 8 x 400 Gb/s NDR InfiniBand", 8,
               &kB200, 8, Bandwidth::Gbps(400), Time::ns(900), 0.94, HostLayout::nvswitch, 5, 8, "QM9700",
               14300, 14.24,
               "AWS p6-b200.48xlarge (8 x B200) on-demand, us-east-1, 2025-26: $113.93/h for 8"},
    HostPreset{"dgx-b300",
               "NVIDIA DGX B300: 8 x B300 on NVSwitch (NVLink 5), 8 x 800 Gb/s ConnectX-8 XDR InfiniBand", 8,
               &kB300, 8, Bandwidth::Gbps(800), Time::ns(900), 0.94, HostLayout::nvswitch, 6, 8, "Q3400", 0,
               0, ""},
    HostPreset{"gb200-nvl72",
               "NVIDIA GB200 NVL72: 72 x B200 (36 GB200 superchips) in one NVLink 5 domain, 72 x 400 Gb/s "
               "ConnectX-7 InfiniBand",
               72, &kGB200, 72, Bandwidth::Gbps(400), Time::ns(900), 0.94, HostLayout::nvswitch, 5, 18,
               "QM9700", 120000, 0, ""},
};

[[nodiscard]] std::span<const HostPreset> host_presets();
/// nullptr when there is no preset of that name.
[[nodiscard]] const HostPreset* find_host_preset(std::string_view name);
/// Comma-separated preset names, for messages and --help.
[[nodiscard]] std::string host_preset_names();

}  // namespace meshsim::hardware
