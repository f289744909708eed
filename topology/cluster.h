#pragma once
// Clusters: N hosts of one preset, or of one host described in a file,
// joined by a network fabric.
//
// Fabrics (every NIC↔switch and switch↔switch link is a `network` link):
//   switch    one switch; every NIC joins it.
//   fat-tree  two levels (three with pods, below). NICs fill leaves in host-major order,
//             `nics_per_leaf` per leaf; every leaf joins every spine. A
//             leaf's uplink capacity is nics_per_leaf × NIC rate ÷
//             oversubscription, split evenly over the spines (as parallel
//             NIC-rate lanes when that divides, else one link of that rate).
//             Default spines: nics_per_leaf ÷ oversubscription (rounded up).
//             With `leaves_per_pod`, three levels: leaves are grouped into
//             pods of that many, in order, each pod with its own `spines`
//             (joined as above, to its own leaves only), and every pod
//             spine joins every one of `cores` core switches. A pod spine's
//             uplink capacity is its downlink capacity ÷
//             core_oversubscription, split evenly over the cores as above
//             (a last, smaller pod's spines keep a full pod's uplinks).
//             Default cores: a pod spine's downlinks in NIC lanes ÷
//             core_oversubscription (rounded up).
//   rail      rail-optimised: hosts are grouped into scalable units of
//             `hosts_per_unit`; in each unit NIC k of every host joins leaf
//             ("rail") k, so same-index GPUs of different hosts of a unit are
//             one switch apart. Every leaf joins every spine; uplinks sized as
//             for the fat tree with hosts_per_unit downlinks per leaf.
//             Default spines: 4 per unit (DGX SuperPOD: 1 SU = 8 leaves + 4
//             spines, 4 SU = 32 leaves + 16 spines), at most hosts_per_unit ÷
//             oversubscription, so that every leaf-spine link carries at least
//             one NIC rate.
// Every switch is of one model (`switch_model`, default the preset's): what
// its power and in-network reduction are (hardware/network_parts.h).
// Switch↔switch hops cost `switch_latency` (default 150 ns); NIC↔switch
// hops the preset's NIC latency unless overridden.
//
// A host from a file (`host_file`: an explicit topology of exactly one
// host and nothing outside it, e.g. what `topo import-nccl` writes) is
// copied N times, its nodes renamed h0/..., h1/... and its links kept; its
// NICs, in the file's order, join the fabric as a preset's do. Such a file
// does not know its NICs' network rate, so `nic_bandwidth` and
// `nic_latency` are required with it; `nic_efficiency` (the share of the
// line rate the fabric links deliver) defaults to 1 there and to the
// preset's figure otherwise.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"
#include "topology/topology.h"

namespace meshsim::topology {

enum class FabricKind { single_switch, fat_tree, rail };

inline constexpr EnumNames<FabricKind, 3> kFabricNames{"fabric",
                                                       {{{FabricKind::single_switch, "switch"},
                                                         {FabricKind::fat_tree, "fat-tree"},
                                                         {FabricKind::rail, "rail"}}}};
[[nodiscard]] inline std::string_view to_string(FabricKind k) {
  return kFabricNames.name(k);
}
[[nodiscard]] inline std::optional<FabricKind> fabric_kind_from(std::string_view s) {
  return kFabricNames.parse(s);
}

struct FabricSpec {
  FabricKind kind = FabricKind::single_switch;
  int nics_per_leaf = 32;              // fat-tree
  int hosts_per_unit = 32;             // rail
  double oversubscription = 1.0;       // fat-tree, rail: downlink / uplink capacity, >= 1
  int spines = 0;                      // 0: the default above
  int leaves_per_pod = 0;              // fat-tree: 0 two levels, else pods of this many leaves and a core
  double core_oversubscription = 1.0;  // fat-tree with pods: pod spine downlink / uplink capacity, >= 1
  int cores = 0;                       // fat-tree with pods: core switches; 0: the default above
};

/// The most hosts a cluster may have (docs/limits.md): 131,072 GPUs of
/// 8-GPU hosts, beyond the largest machines built. Building and routing
/// grow with it: 16,384 dgx-h100 hosts take seconds to build and minutes
/// for one all-reduce over every GPU.
inline constexpr int kMaxHosts = 16'384;

struct ClusterSpec {
  std::string host_preset;                    // a preset's name, or the host file's path (host_file)
  std::shared_ptr<const Topology> host_file;  // the one host to repeat, instead of a preset
  int hosts = 1;
  FabricSpec fabric;
  std::optional<Bandwidth> nic_bandwidth;  // default: the preset's
  std::optional<Time> nic_latency;         // default: the preset's
  std::optional<double> nic_efficiency;    // default: the preset's (1 for a host file)
  Time switch_latency = Time::ns(150);
  std::string switch_model;  // the fabric's switches (hardware/network_parts.h); default: the preset's
  std::string name;          // default: "<preset>-x<hosts>[-<fabric>]"
};

/// Options of `spec` that cannot change anything on this cluster (e.g. an
/// oversubscription when every NIC hangs off one leaf), one sentence each.
[[nodiscard]] std::vector<std::string> cluster_warnings(const ClusterSpec& spec);

/// Builds the explicit topology of a cluster. UsageError on an unknown
/// preset or impossible parameters (message names the parameter).
[[nodiscard]] Topology build_cluster(const ClusterSpec& spec);

}  // namespace meshsim::topology
