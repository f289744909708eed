#pragma once
// The catalogue of network parts: fabric switches and host NICs, each once,
// with what the cost model (topology/cost.h) and the collectives
// (in-network reduction, plan/collective.h) read of them.
//
// Switches (NVIDIA's switch manuals and product briefs):
//   QM8700  Quantum, 40 x 200 Gb/s HDR, SHARPv2 (one aggregation tree at a
//           time per switch)
//   QM9700  Quantum-2, 64 x 400 Gb/s NDR (32 twin-port OSFP cages, 51.2
//           Tb/s), SHARPv3 (many trees, bf16 reductions)
//   Q3400   Quantum-X800, 144 x 800 Gb/s XDR (115.2 Tb/s), SHARPv4; the
//           switch of ConnectX-8 (800 Gb/s XDR, PCIe Gen6 x16) hosts
// Their rated power is not in the sources at hand: a topology gives it
// (switch_watts), and without it the fabric's power is not counted.
// NICs (watts: typical, passive cables, PCIe Gen5 x16; ConnectX-7 user
// manual, MCX75310AAS-HEAT and -NEAT):
//   ConnectX-7 200G  16.7 W
//   ConnectX-7 400G  24.9 W

#include <array>
#include <string>
#include <string_view>

#include "core/units.h"

namespace meshsim::hardware {

struct SwitchSpec {
  std::string_view name;
  std::string_view summary;
  Bandwidth port_rate;  // per port, per direction
  int ports = 0;
  int sharp = 0;  // the SHARP generation its ASIC runs (in-network reduction); 0: none
  std::string_view source;
};

struct NicSpec {
  std::string_view name;
  Bandwidth rate;  // per port, per direction
  double watts = 0;
  std::string_view source;
};

inline constexpr std::array kSwitches{
    SwitchSpec{"QM8700", "NVIDIA Quantum QM8700: 40 x 200 Gb/s HDR InfiniBand, SHARPv2", Bandwidth::Gbps(200),
               40, 2, "NVIDIA QM87xx switch manual"},
    SwitchSpec{"QM9700", "NVIDIA Quantum-2 QM9700: 64 x 400 Gb/s NDR InfiniBand, SHARPv3",
               Bandwidth::Gbps(400), 64, 3, "NVIDIA QM97x0 switch manual"},
    SwitchSpec{"Q3400", "NVIDIA Quantum-X800 Q3400: 144 x 800 Gb/s XDR InfiniBand, SHARPv4",
               Bandwidth::Gbps(800), 144, 4, "NVIDIA XDR switches hardware manual"},
};

inline constexpr std::array kNics{
    NicSpec{"ConnectX-7 200G", Bandwidth::Gbps(200), 16.7, "ConnectX-7 user manual (MCX75310AAS-HEAT)"},
    NicSpec{"ConnectX-7 400G", Bandwidth::Gbps(400), 24.9, "ConnectX-7 user manual (MCX75310AAS-NEAT)"},
};

/// The switch called `name`; nullptr when the catalogue has none.
[[nodiscard]] const SwitchSpec* find_switch(std::string_view name);
/// The switch models' names, comma-separated, for messages.
[[nodiscard]] std::string switch_names();
/// The catalogue's NIC of exactly `rate`; nullptr for none.
[[nodiscard]] const NicSpec* nic_of_rate(Bandwidth rate);

}  // namespace meshsim::hardware
