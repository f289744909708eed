#pragma once
// Plan a redistribution with each strategy (synth, xla), emit the plans
// with payloads and simulate them: what the CLI and the study report.

#include <optional>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "reshard/redistribute/synthesis.h"
#include "sim/executor.h"

namespace meshsim::reshard::redistribute {

/// synth: the synthesis with every step; rink: Rink et al.'s steps only;
/// xla: the XLA-style baseline (reshard/redistribute/synthesis.h).
enum class Strategy { synth, rink, xla };
inline constexpr EnumNames<Strategy, 3> kStrategyNames{
    "strategy", {{{Strategy::synth, "synth"}, {Strategy::rink, "rink"}, {Strategy::xla, "xla"}}}};
inline constexpr Strategy kAllStrategies[] = {Strategy::synth, Strategy::rink, Strategy::xla};
[[nodiscard]] inline std::string_view to_string(Strategy s) {
  return kStrategyNames.name(s);
}

struct Outcome {
  Strategy strategy = Strategy::synth;
  std::vector<Step> steps;
  std::vector<Time> step_times;  // each step simulated alone
  Emission emission;             // the plan (with payloads) and its accounting
  sim::SimResult result;         // the whole plan simulated
  double network_bytes = 0;      // what it sent into the fabric (nic_traffic)
};

/// `timer` must serve `p` (StepTimer::serves). With `xla_budget`, synth
/// looks first for the fastest sequence that sends no more bytes into the
/// fabric than XLA-style does, and only if there is none for the fastest
/// at all. Between two meshes XLA-style is left out (it reshards within
/// one), and so is the budget. UsageError when synth finds no sequence
/// within the memory bound (and `memory_limit`); rink's row is left out
/// when Rink's steps alone find none (without a memory limit).
[[nodiscard]] std::vector<Outcome> evaluate(const topology::Topology& t, const Problem& p,
                                            const std::vector<Strategy>& strategies, StepTimer& timer,
                                            std::optional<Bytes> memory_limit = std::nullopt,
                                            bool record_timeline = false, bool xla_budget = true);

}  // namespace meshsim::reshard::redistribute
