#pragma once
// Plan and simulate a resharding problem with a set of strategies and
// balancing modes (and `auto`), measuring what the CLI and studies report.

#include <optional>
#include <string>
#include <vector>

#include "planner/reshard.h"
#include "sim/executor.h"

namespace meshsim::planner {

struct ReshardOutcome {
  std::string name;     // strategy, or "auto"
  std::string balance;  // balancing mode, or "<strategy>/<mode>+<improvements>" for auto
  bool moves_data = true;
  plan::Plan plan;
  sim::SimResult result;
  double network_bytes = 0;  // bytes that left NICs for the fabric
  std::string busiest_nic;   // the NIC that sent the most
  double busiest_nic_bytes = 0;
};

/// What a simulated plan sent into the fabric: bytes on network links that
/// leave a NIC (what crosses between hosts on the wire, ring forwarding
/// included), and the NIC that sent the most.
struct NicTraffic {
  double network_bytes = 0;
  std::string busiest_nic;
  double busiest_nic_bytes = 0;
};
[[nodiscard]] NicTraffic nic_traffic(const topology::Topology& t, const sim::SimResult& r);

/// Signal is evaluated once (its balance is moot); `with_auto` adds the
/// auto row. When the two meshes share devices, the redistributions
/// (planner/redistribute: "synth", "rink", and on one mesh "xla"; balance
/// "-") are added too.
[[nodiscard]] std::vector<ReshardOutcome> evaluate_reshard(const topology::Topology& t,
                                                           const ReshardProblem& p,
                                                           const std::vector<UnitTask>& tasks,
                                                           const std::vector<Strategy>& strategies,
                                                           const std::vector<Balance>& balances,
                                                           bool with_auto, bool record_timeline = false);

/// The index of the fastest outcome that moves data (ties: the first); 0
/// when none does.
[[nodiscard]] std::size_t fastest_moving(const std::vector<ReshardOutcome>& outcomes);

}  // namespace meshsim::planner
