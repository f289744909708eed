#pragma once
// Plan and simulate a resharding problem with a set of strategies and
// balancing modes (and `auto`), measuring what the CLI and studies report.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reshard/redistribute/evaluate.h"
#include "reshard/reshard.h"
#include "sim/executor.h"

namespace meshsim::reshard {

/// What made a plan: a strategy under a balancing mode, auto's search, or
/// a redistribution (when the meshes share devices).
struct Method {
  enum class Kind : std::uint8_t { strategy, automatic, redistribution };
  Kind kind = Kind::strategy;
  Strategy strategy = Strategy::send_recv;  // automatic: the strategy it chose
  Balance balance = Balance::none;          // automatic: the mode its search started from
  redistribute::Strategy redistribution = redistribute::Strategy::synth;
  int improvements = 0;  // automatic: the swaps its search kept

  /// Strategy `s` under balancing `b`.
  [[nodiscard]] bool is(Strategy s, Balance b) const {
    return kind == Kind::strategy && strategy == s && balance == b;
  }
  /// "send-recv", "auto", "synth".
  [[nodiscard]] std::string name() const;
  /// "host-size"; auto: "broadcast/none +3 swaps"; a redistribution: "-".
  [[nodiscard]] std::string balance_name() const;
};

struct ReshardOutcome {
  Method method;
  bool moves_data = true;
  plan::Plan plan;
  sim::SimResult result;
  double network_bytes = 0;  // bytes that left NICs for the fabric
  std::string busiest_nic;   // the NIC that sent the most
  double busiest_nic_bytes = 0;
};

/// Signal is evaluated once (its balance is moot); `with_auto` adds the
/// auto row. When the two meshes share devices, the redistributions
/// (reshard/redistribute: synth, rink, and on one mesh xla) are added too.
[[nodiscard]] std::vector<ReshardOutcome> evaluate_reshard(const topology::Topology& t,
                                                           const ReshardProblem& p,
                                                           const std::vector<UnitTask>& tasks,
                                                           const std::vector<Strategy>& strategies,
                                                           const std::vector<Balance>& balances,
                                                           bool with_auto, bool record_timeline = false);

/// The index of the fastest outcome that moves data (ties: the first); 0
/// when none does.
[[nodiscard]] std::size_t fastest_moving(const std::vector<ReshardOutcome>& outcomes);

}  // namespace meshsim::reshard
