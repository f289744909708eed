#pragma once
// What a job costs on a cluster: the price of its GPUs' time and the power
// of what it runs on, so that a step's time becomes dollars and energy.
//
// Price: usd_per_gpu_hour × the job's GPUs × time. The price per GPU-hour
// is the topology's own (a file's "price_per_gpu_hour", --gpu-hour-price),
// else the host preset's published on-demand price (hardware/hosts.h); a
// rented GPU's price covers its host, network and power.
//
// Power, at rated figures (the most the parts draw; a training step at
// high utilisation comes close, an idle one does not):
//   hosts    each of the job's hosts at the topology's host_watts, else at
//            its preset's system power (its GPUs, CPUs, NVSwitches, NICs,
//            fans); a host with neither counts its GPUs' board power and
//            its NICs' (hardware/network_parts.h), and says so
//   fabric   with the topology's switch_watts: each switch of a catalogue
//            model at switch_watts × the ports its links take ÷ its ports
//            (a link of k lanes, or of a rate above the port's, takes
//            ⌈line rate ÷ port rate⌉), a switch of no known model whole;
//            the fabric's sum is shared by hosts and the job carries its
//            hosts' share. Without switch_watts the fabric is not counted.
// Optics (transceivers: 8–9 W per 400G port, 15–17 W per 800G twin port)
// are not counted.
// Energy = power × time; per million tokens = per step ÷ tokens per step × 10⁶.

#include <optional>
#include <string>

#include "core/units.h"
#include "topology/topology.h"

namespace meshsim::topology {

/// Bounds on the figures a topology may give (docs/limits.md).
inline constexpr double kMaxGpuHourUsd = 1000;
inline constexpr double kMaxWatts = 1e6;  // a host's or a switch's

struct JobCost {
  int gpus = 0;
  int hosts = 0;
  std::optional<double> usd_per_gpu_hour;  // none: no price known
  std::string price_source;                // where the price comes from
  double host_watts = 0;                   // the job's hosts together
  double fabric_watts = 0;                 // the job's share of the switches
  std::string power_basis;                 // what the watts count, one phrase

  [[nodiscard]] double watts() const { return host_watts + fabric_watts; }
  /// Dollars for `t` of the job; none without a price.
  [[nodiscard]] std::optional<double> usd(Time t) const;
  [[nodiscard]] double joules(Time t) const { return watts() * t.seconds(); }
};

/// The cost of a job over the first `job_gpus` GPUs of `t` (placed: the
/// job's hosts come first). UsageError when `t` has fewer GPUs.
[[nodiscard]] JobCost job_cost(const Topology& t, int job_gpus);

/// The fabric's rated power (watts) as the header says; 0 without switch_watts.
[[nodiscard]] double fabric_watts(const Topology& t);

/// "$0.52 per step, $3.41 per million tokens" and "3.10 kWh per step, ..."
/// lines' figures, for outputs: cost per step and per million tokens.
struct StepCost {
  std::optional<double> usd_per_step;
  std::optional<double> usd_per_million_tokens;  // none without tokens or a price
  double kwh_per_step = 0;
  std::optional<double> kwh_per_million_tokens;
};
[[nodiscard]] StepCost step_cost(const JobCost& c, Time step, double tokens_per_step);

}  // namespace meshsim::topology
