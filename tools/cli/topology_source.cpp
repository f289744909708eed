#include "tools/cli/topology_source.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "hardware/hosts.h"
#include "hardware/network_parts.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "topology/cluster.h"
#include "topology/cost.h"
#include "topology/placement.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

namespace meshsim::cli {

namespace {
std::vector<std::string> switch_model_names() {
  std::vector<std::string> out;
  for (const auto& s : hardware::kSwitches) out.emplace_back(s.name);
  return out;
}
}  // namespace

void TopologySource::add_to(CLI::App& cmd, const std::string& flag, bool required) {
  cmd.add_option(
         flag.empty() ? std::string("topology") : flag + ",-t", what,
         fmt::format("Topology file (meshsim.topology/1) or host preset: {}", hardware::host_preset_names()))
      ->required(required);
  auto* g = cmd.add_option_group("preset cluster", "Options that build a cluster from a host preset");
  g->add_option("--hosts", hosts, "Number of hosts (default 1)")->check(CLI::Range(1, topology::kMaxHosts));
  g->add_option("--fabric", fabric, "Network fabric: switch (default), fat-tree or rail")
      ->check(CLI::IsMember(topology::kFabricNames.names()));
  g->add_option("--nic-bandwidth", nic_bandwidth,
                "NIC rate per direction, e.g. 400Gbps (default: the preset's)");
  g->add_option("--nic-latency", nic_latency,
                "Latency of a NIC-switch hop, e.g. 1us (default: the preset's)");
  g->add_option("--nics-per-leaf", nics_per_leaf, "fat-tree: NICs per leaf switch (default 32)")
      ->check(CLI::Range(1, 4096));
  g->add_option("--hosts-per-unit", hosts_per_unit, "rail: hosts per scalable unit (default 32)")
      ->check(CLI::Range(1, 4096));
  g->add_option("--oversubscription", oversubscription, "fat-tree, rail: downlink/uplink ratio (default 1)")
      ->check(number_in(1.0, 1024.0));
  g->add_option("--spines", spines,
                "fat-tree, rail: number of spine switches, per pod with --leaves-per-pod (default: see docs)")
      ->check(CLI::Range(1, 4096));
  g->add_option("--leaves-per-pod", leaves_per_pod,
                "fat-tree: group leaves into pods of N, each with its own spines, joined by core switches "
                "(a three-level tree; default: two levels)")
      ->check(CLI::Range(1, 4096));
  g->add_option("--cores", cores, "fat-tree with pods: number of core switches (default: see docs)")
      ->check(CLI::Range(1, 4096));
  g->add_option("--core-oversubscription", core_oversubscription,
                "fat-tree with pods: a pod spine's downlink/uplink ratio (default 1)")
      ->check(number_in(1.0, 1024.0));
  g->add_option("--switch", switch_model,
                fmt::format("The fabric's switch model, for its power and in-network reduction: {} "
                            "(default: the preset's)",
                            hardware::switch_names()))
      ->check(CLI::IsMember(switch_model_names()));
  cmd.add_option("--routing", routing,
                 "How flows spread over equal-cost fabric paths: ecmp (a fixed hash per pair, the default), "
                 "adaptive (each flow takes the least-loaded path) or deterministic (an InfiniBand subnet "
                 "manager's fat-tree routing: one spine per destination); overrides the topology file's")
      ->check(CLI::IsMember(topology::kRoutingPolicyNames.names()));
  cmd.add_flag(
      "--sharp", sharp,
      "Let all-reduces reduce in the fabric's switches (NCCL's CollNet with the SHARP plugin, "
      "NCCL_COLLNET_ENABLE=1): collnet_direct, collnet_chain and nvls across hosts; every switch must "
      "be of a SHARP model (--switch)");
}

void TopologySource::add_placement_to(CLI::App& cmd) {
  cmd.add_option("--placement", placement,
                 "Which hosts the job runs on, in rank order: contiguous (the first ones, the default), "
                 "spread (evenly over the cluster), random[:SEED] (drawn at random, as on a shared "
                 "cluster; seed 1 by default) or hosts=LIST (e.g. hosts=8-15,0-7); overrides the topology "
                 "file's");
}

void TopologySource::add_cost_to(CLI::App& cmd) {
  cmd.add_option("--gpu-hour-price", gpu_hour_price,
                 "Dollars per GPU-hour, for the cost per step and per million tokens (default: the preset's "
                 "on-demand price); overrides the topology file's")
      ->check(number_in(0.0, topology::kMaxGpuHourUsd));
  cmd.add_option("--host-watts", host_watts,
                 "Rated power of each host in watts, for the energy per step (default: the preset's system "
                 "power); overrides the topology file's")
      ->check(number_in(0.0, topology::kMaxWatts));
  cmd.add_option("--switch-watts", switch_watts,
                 "Rated power of each fabric switch in watts, shared over its ports (default: not counted); "
                 "overrides the topology file's")
      ->check(number_in(0.0, topology::kMaxWatts));
}

topology::Topology TopologySource::load() const {
  // The preset options, in --help's order; `network`: those that shape the
  // network between hosts.
  struct PresetOption {
    bool given;
    const char* name;
    bool network;
  };
  const std::array<PresetOption, 12> options{
      {{hosts.has_value(), "--hosts", false},
       {fabric.has_value(), "--fabric", true},
       {nic_bandwidth.has_value(), "--nic-bandwidth", true},
       {nic_latency.has_value(), "--nic-latency", true},
       {nics_per_leaf.has_value(), "--nics-per-leaf", true},
       {hosts_per_unit.has_value(), "--hosts-per-unit", true},
       {oversubscription.has_value(), "--oversubscription", true},
       {spines.has_value(), "--spines", true},
       {leaves_per_pod.has_value(), "--leaves-per-pod", true},
       {cores.has_value(), "--cores", true},
       {core_oversubscription.has_value(), "--core-oversubscription", true},
       {switch_model.has_value(), "--switch", false}}};
  const hardware::HostPreset* preset = hardware::find_host_preset(what);
  if (preset == nullptr) {
    std::error_code ec;
    if (!std::filesystem::exists(what, ec))
      throw UsageError(fmt::format("\"{}\" is neither a topology file nor a host preset (presets: {})", what,
                                   hardware::host_preset_names()));
    if (std::any_of(options.begin(), options.end(), [](const PresetOption& o) { return o.given; })) {
      std::vector<std::string> names;
      for (const PresetOption& o : options) names.emplace_back(o.name);
      const std::string last = names.back();
      names.pop_back();
      throw UsageError(fmt::format("{} and {} apply to presets; edit the cluster in the file instead",
                                   fmt::join(names, ", "), last));
    }
    topology::Topology t = topology::load_topology_file(what);
    apply_overrides(t);
    return t;
  }
  topology::ClusterSpec spec;
  spec.host_preset = what;
  spec.hosts = hosts.value_or(1);
  if (fabric) spec.fabric.kind = *topology::fabric_kind_from(*fabric);
  if (nic_bandwidth) spec.nic_bandwidth = option_value("--nic-bandwidth", *nic_bandwidth, parse_bandwidth);
  if (nic_latency) spec.nic_latency = option_value("--nic-latency", *nic_latency, parse_time);
  if (nics_per_leaf) spec.fabric.nics_per_leaf = *nics_per_leaf;
  if (hosts_per_unit) spec.fabric.hosts_per_unit = *hosts_per_unit;
  if (switch_model) spec.switch_model = *switch_model;
  // Network options on one host, or options of one fabric given with
  // another: said, not silently dropped.
  std::vector<std::string> network;
  for (const PresetOption& o : options)
    if (o.given && o.network) network.emplace_back(o.name);
  if (spec.hosts == 1 && !network.empty()) {
    fmt::print(stderr, "warning: {} {} no effect on one host: no traffic leaves it (give --hosts N)\n",
               fmt::join(network, ", "), network.size() == 1 ? "has" : "have");
  } else {
    if (nics_per_leaf && spec.fabric.kind != topology::FabricKind::fat_tree)
      fmt::print(stderr, "warning: --nics-per-leaf has no effect on a {} fabric (it sizes fat-tree leaves)\n",
                 topology::to_string(spec.fabric.kind));
    if (hosts_per_unit && spec.fabric.kind != topology::FabricKind::rail)
      fmt::print(stderr, "warning: --hosts-per-unit has no effect on a {} fabric (it sizes rail units)\n",
                 topology::to_string(spec.fabric.kind));
  }
  if (oversubscription) spec.fabric.oversubscription = *oversubscription;
  if (spines) spec.fabric.spines = *spines;
  if (leaves_per_pod) spec.fabric.leaves_per_pod = *leaves_per_pod;
  if (cores) spec.fabric.cores = *cores;
  if (core_oversubscription) spec.fabric.core_oversubscription = *core_oversubscription;
  if (spec.hosts > 1)
    for (const auto& w : topology::cluster_warnings(spec)) fmt::print(stderr, "warning: {}\n", w);
  topology::Topology t = topology::build_cluster(spec);
  apply_overrides(t);
  return t;
}

void TopologySource::apply_overrides(topology::Topology& t) const {
  if (routing) t.routing = *topology::routing_policy_from(*routing);
  if (sharp) t.sharp = true;
  if (placement) {
    try {
      (void)topology::parse_placement(*placement);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--placement: {}", e.what()));
    }
    t.placement = *placement;
  }
  apply_costs(t);
}

void TopologySource::apply_costs(topology::Topology& t) const {
  if (gpu_hour_price) t.costs.gpu_hour_usd = *gpu_hour_price;
  if (host_watts) t.costs.host_watts = *host_watts;
  if (switch_watts) t.costs.switch_watts = *switch_watts;
}

}  // namespace meshsim::cli
