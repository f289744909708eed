#pragma once
// What a simulated plan sent into the fabric.

#include <string>

#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::sim {

/// What a simulated plan sent into the fabric: bytes on network links that
/// leave a NIC (what crosses between hosts on the wire, ring forwarding
/// included), and the NIC that sent the most.
struct NicTraffic {
  double network_bytes = 0;
  std::string busiest_nic;
  double busiest_nic_bytes = 0;
};
[[nodiscard]] NicTraffic nic_traffic(const topology::Topology& t, const SimResult& r);

}  // namespace meshsim::sim
