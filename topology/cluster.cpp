#include "topology/cluster.h"

#include <cmath>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "hardware/hosts.h"
#include "hardware/network_parts.h"
#include "topology/presets.h"

namespace meshsim::topology {

namespace {

struct NetParams {
  Bandwidth nic_rate;
  Time nic_latency;
  double efficiency = 1.0;
  Time switch_latency;
  std::string switch_model;
};

NodeId add_switch(Topology& t, const std::string& name, const NetParams& p) {
  return t.add_node(Node{name, NodeKind::network_switch, -1, p.switch_model});
}

void connect(Topology& t, NodeId a, NodeId b, Bandwidth rate, int count, Time latency, double eff) {
  t.add_link(Link{LinkKind::network, a, b, rate, count, latency, eff, 0, 0});
}

std::vector<NodeId> add_switches(Topology& t, std::string_view prefix, int count, const NetParams& p) {
  std::vector<NodeId> out;
  for (int i = 0; i < count; ++i) out.push_back(add_switch(t, fmt::format("{}{}", prefix, i), p));
  return out;
}

// Joins every switch of `lower` to every switch of `upper` so that each
// lower switch, with `lanes` NIC lanes of downlinks, has lanes ÷ oversub of
// uplink capacity, split evenly over `upper` (`what`: their name, for the
// error).
void join_up(Topology& t, const std::vector<NodeId>& lower, const std::vector<NodeId>& upper, double lanes,
             double oversub, const char* what, const NetParams& p) {
  const double per_link = lanes / (oversub * static_cast<double>(upper.size()));
  const double whole = std::round(per_link);
  const bool integral = std::fabs(per_link - whole) < 1e-9 && whole >= 1.0;
  const Bandwidth rate = integral ? p.nic_rate : p.nic_rate.scaled(per_link);
  const int count = integral ? static_cast<int>(whole) : 1;
  if (rate.is_zero())
    throw UsageError(fmt::format("fabric uplinks would have zero bandwidth; use fewer {}", what));
  for (NodeId a : lower)
    for (NodeId b : upper) connect(t, a, b, rate, count, p.switch_latency, p.efficiency);
}

// Enough upper switches for every downlink lane ÷ oversub to have its own.
int default_spines(double lanes, double oversub) {
  return std::max(1, static_cast<int>(std::ceil(lanes / oversub - 1e-9)));
}

// 4 spines per unit (DGX SuperPOD: 1 SU = 8 leaves + 4 spines), but no more
// than a leaf has uplink lanes: past 8 units every leaf-spine link would be
// thinner than one NIC, and a single flow could not leave its leaf at NIC
// rate (large SuperPODs add a core tier instead).
int default_rail_spines(int units, int hosts_per_unit, double oversub) {
  return std::min(4 * units, default_spines(hosts_per_unit, oversub));
}

// The switches of a fat tree over `nics` NICs: leaves, spines (per pod),
// pods (1: two levels, no core) and cores.
struct TreeShape {
  std::int64_t leaves = 0;
  int spines = 0;
  std::int64_t pods = 1;
  int cores = 0;
  double pod_lanes = 0;  // a pod spine's downlinks, in NIC lanes
};

TreeShape fat_tree_shape(const FabricSpec& f, std::int64_t nics) {
  TreeShape s;
  s.leaves = (nics + f.nics_per_leaf - 1) / f.nics_per_leaf;
  s.spines = f.spines > 0 ? f.spines : default_spines(f.nics_per_leaf, f.oversubscription);
  if (f.leaves_per_pod == 0 || s.leaves <= f.leaves_per_pod) return s;
  s.pods = (s.leaves + f.leaves_per_pod - 1) / f.leaves_per_pod;
  s.pod_lanes = static_cast<double>(f.leaves_per_pod) * f.nics_per_leaf /
                (f.oversubscription * static_cast<double>(s.spines));
  s.cores = f.cores > 0 ? f.cores : default_spines(s.pod_lanes, f.core_oversubscription);
  return s;
}

// What a cluster repeats: a preset, or the one host of a file.
struct HostSource {
  std::string name;
  int nics = 0;
  Bandwidth nic_rate;
  Time nic_latency;
  double nic_efficiency = 1.0;
  const hardware::HostPreset* preset = nullptr;
  const Topology* file = nullptr;
};

// The host file's checks: one host, every node in it, every link inside it.
void check_host_file(const ClusterSpec& spec, const Topology& h) {
  if (h.host_count() != 1)
    throw UsageError(fmt::format("the host file {} describes {} hosts; a cluster repeats exactly one",
                                 spec.host_preset, h.host_count()));
  for (const Node& n : h.nodes())
    if (n.host != 0)
      throw UsageError(
          fmt::format("the host file {} has node \"{}\" outside its host; give the host alone "
                      "(the cluster adds the fabric)",
                      spec.host_preset, n.name));
  if (h.gpus().empty()) throw UsageError(fmt::format("the host file {} has no GPU", spec.host_preset));
  if (h.host_nics(0).empty() && spec.hosts > 1)
    throw UsageError(fmt::format("the host file {} has no NIC to join the fabric with", spec.host_preset));
  for (const auto& [key, given] : {std::pair{"nic_bandwidth", spec.nic_bandwidth.has_value()},
                                   {"nic_latency", spec.nic_latency.has_value()}})
    if (!given)
      throw UsageError(
          fmt::format("a cluster of hosts from a file needs \"{}\": the host file {} does not "
                      "say what its NICs do on the network",
                      key, spec.host_preset));
}

HostSource host_source(const ClusterSpec& spec) {
  HostSource s;
  s.name = spec.host_preset;
  if (spec.host_file) {
    check_host_file(spec, *spec.host_file);
    s.file = spec.host_file.get();
    s.nics = static_cast<int>(s.file->host_nics(0).size());
    s.nic_rate = *spec.nic_bandwidth;
    s.nic_latency = *spec.nic_latency;
    s.nic_efficiency = spec.nic_efficiency.value_or(1.0);
    return s;
  }
  s.preset = hardware::find_host_preset(spec.host_preset);
  if (s.preset == nullptr)
    throw UsageError(fmt::format("unknown host preset \"{}\" (known: {})", spec.host_preset,
                                 hardware::host_preset_names()));
  s.nics = s.preset->nics;
  s.nic_rate = spec.nic_bandwidth.value_or(s.preset->nic_bandwidth);
  s.nic_latency = spec.nic_latency.value_or(s.preset->nic_latency);
  s.nic_efficiency = spec.nic_efficiency.value_or(s.preset->nic_efficiency);
  return s;
}

// Adds host "h<index>": the preset's, or a copy of the file's host with its
// nodes renamed (the part after "<host>/" kept) and its links.
void add_host(Topology& t, const HostSource& src) {
  if (src.preset != nullptr) {
    add_preset_host(t, *src.preset);
    return;
  }
  const Topology& h = *src.file;
  const int host = t.add_host(Host{fmt::format("h{}", t.host_count()), h.hosts().front().preset});
  const std::string prefix = h.hosts().front().name + "/";
  std::vector<NodeId> id(h.node_count());
  for (NodeId n = 0; n < h.node_count(); ++n) {
    Node x = h.node(n);
    const std::string_view rest = std::string_view(x.name).starts_with(prefix)
                                      ? std::string_view(x.name).substr(prefix.size())
                                      : std::string_view(x.name);
    x.name = fmt::format("h{}/{}", host, rest);
    x.host = host;
    id[n] = t.add_node(std::move(x));
  }
  for (LinkId l = 0; l < h.link_count(); ++l) {
    Link x = h.link(l);
    x.a = id[x.a];
    x.b = id[x.b];
    t.add_link(x);
  }
}

// Oversubscription or spines where they shape nothing.
std::optional<std::string> uplink_warning(const ClusterSpec& spec, std::int64_t nics) {
  const FabricSpec& f = spec.fabric;
  if (f.oversubscription == 1.0 && f.spines == 0) return std::nullopt;
  const char* what = f.oversubscription != 1.0 ? "oversubscription" : "spines";
  if (f.kind == FabricKind::single_switch)
    return fmt::format("{} has no effect on a single-switch fabric", what);
  if (f.kind == FabricKind::fat_tree && nics <= f.nics_per_leaf)
    return fmt::format("{} has no effect: all {} NICs fit under one leaf ({} NICs per leaf)", what, nics,
                       f.nics_per_leaf);
  if (f.kind == FabricKind::rail && spec.hosts <= f.hosts_per_unit)
    return fmt::format(
        "{} only affects traffic between rails here: all {} hosts fit in one unit of {}, so same-rail "
        "traffic never reaches a spine",
        what, spec.hosts, f.hosts_per_unit);
  return std::nullopt;
}

// Pods, cores or their oversubscription where there is no core.
std::optional<std::string> core_warning(const ClusterSpec& spec, std::int64_t nics) {
  const FabricSpec& f = spec.fabric;
  if (f.leaves_per_pod == 0 && f.cores == 0 && f.core_oversubscription == 1.0) return std::nullopt;
  const char* what = f.leaves_per_pod != 0 ? "leaves per pod"
                     : f.cores != 0        ? "cores"
                                           : "core oversubscription";
  if (f.kind != FabricKind::fat_tree)
    return fmt::format("{} has no effect on a {} fabric (it shapes a fat tree's pods and core)", what,
                       to_string(f.kind));
  if (f.leaves_per_pod == 0)
    return fmt::format("{} has no effect on a two-level fat tree (give leaves per pod for a core)", what);
  if (const TreeShape shape = fat_tree_shape(f, nics); shape.pods == 1)
    return fmt::format(
        "leaves per pod has no effect: all {} leaves fit in one pod of {}, which needs no core", shape.leaves,
        f.leaves_per_pod);
  return std::nullopt;
}

}  // namespace

std::vector<std::string> cluster_warnings(const ClusterSpec& spec) {
  std::vector<std::string> out;
  int per_host = 0;
  try {
    per_host = host_source(spec).nics;
  } catch (const UsageError&) {
    return out;  // build_cluster says what is wrong with the host
  }
  const std::int64_t nics = static_cast<std::int64_t>(spec.hosts) * per_host;
  for (const auto& w : {uplink_warning(spec, nics), core_warning(spec, nics)})
    if (w) out.push_back(*w);
  return out;
}

namespace {
// Refuses clusters whose fabric alone would not fit in memory (every leaf
// joins every spine: leaves x spines links).
void refuse_huge_fabric(const ClusterSpec& spec, const HostSource& src) {
  const FabricSpec& f = spec.fabric;
  const auto nics = static_cast<std::int64_t>(spec.hosts) * src.nics;
  std::int64_t leaves = 0;
  std::int64_t spines = 0;
  std::int64_t core_links = 0;
  if (f.kind == FabricKind::fat_tree) {
    const TreeShape shape = fat_tree_shape(f, nics);
    leaves = shape.leaves;
    spines = shape.spines;
    core_links = shape.pods * shape.spines * shape.cores;
  } else if (f.kind == FabricKind::rail) {
    const std::int64_t units = (spec.hosts + f.hosts_per_unit - 1) / f.hosts_per_unit;
    leaves = units * src.nics;
    spines = f.spines > 0
                 ? f.spines
                 : default_rail_spines(static_cast<int>(units), f.hosts_per_unit, f.oversubscription);
  }
  constexpr std::int64_t kMaxFabricLinks = 20'000'000;
  const std::int64_t links = leaves * spines + core_links + nics;
  if (links > kMaxFabricLinks)
    throw UsageError(fmt::format(
        "the fabric would have {} links ({} leaves x {} spines + {} core links + {} NIC links); the limit "
        "is {}: use fewer spines or cores, larger leaves or more hosts per unit",
        links, leaves, spines, core_links, nics, kMaxFabricLinks));
}
}  // namespace

Topology build_cluster(const ClusterSpec& spec) {
  if (spec.hosts < 1 || spec.hosts > kMaxHosts)
    throw UsageError(fmt::format("hosts must be between 1 and {}, got {}", kMaxHosts, spec.hosts));
  const FabricSpec& f = spec.fabric;
  if (!(f.oversubscription >= 1.0) || !std::isfinite(f.oversubscription))
    throw UsageError(fmt::format("oversubscription must be >= 1, got {}", f.oversubscription));
  if (f.spines < 0) throw UsageError("spines must be >= 0 (0 picks the default)");
  if (f.leaves_per_pod < 0) throw UsageError("leaves_per_pod must be >= 0 (0: two levels)");
  if (f.cores < 0) throw UsageError("cores must be >= 0 (0 picks the default)");
  if (!(f.core_oversubscription >= 1.0) || !std::isfinite(f.core_oversubscription))
    throw UsageError(fmt::format("core oversubscription must be >= 1, got {}", f.core_oversubscription));
  if (f.kind == FabricKind::fat_tree && f.nics_per_leaf < 1) throw UsageError("nics_per_leaf must be >= 1");
  if (f.kind == FabricKind::rail && f.hosts_per_unit < 1) throw UsageError("hosts_per_unit must be >= 1");
  if (spec.nic_bandwidth && (spec.nic_bandwidth->bps() <= 0 || *spec.nic_bandwidth > kMaxLaneRate))
    throw UsageError("NIC bandwidth must be greater than 0 and at most 100Tbps");
  for (const auto& [what, t] : {std::pair{"NIC latency", spec.nic_latency.value_or(Time::zero())},
                                std::pair{"switch latency", spec.switch_latency}})
    if (t < Time::zero() || t > kMaxHopLatency)
      throw UsageError(fmt::format("{} must be between 0 and 1s, got {}", what, exact_string(t)));

  if (spec.nic_efficiency && !(*spec.nic_efficiency > 0 && *spec.nic_efficiency <= 1))
    throw UsageError(fmt::format("NIC efficiency must be in (0, 1], got {}", *spec.nic_efficiency));
  const HostSource src = host_source(spec);
  refuse_huge_fabric(spec, src);
  // The switches: as given, else the preset's (a host file's host may name one).
  const hardware::HostPreset* model_of =
      src.preset != nullptr ? src.preset : hardware::find_host_preset(src.file->hosts().front().preset);
  const std::string switch_model = !spec.switch_model.empty() ? spec.switch_model
                                   : model_of != nullptr      ? std::string(model_of->switch_model)
                                                              : std::string();
  if (!switch_model.empty() && hardware::find_switch(switch_model) == nullptr)
    throw UsageError(
        fmt::format("unknown switch model \"{}\" (known: {})", switch_model, hardware::switch_names()));
  const NetParams p{src.nic_rate, src.nic_latency, src.nic_efficiency, spec.switch_latency, switch_model};
  const std::string base = src.file != nullptr ? src.file->name : src.name;
  Topology t;
  t.name = !spec.name.empty() ? spec.name
           : f.kind == FabricKind::single_switch
               ? fmt::format("{}-x{}", base, spec.hosts)
               : fmt::format("{}-x{}-{}", base, spec.hosts, to_string(f.kind));
  for (int h = 0; h < spec.hosts; ++h) add_host(t, src);
  if (src.file != nullptr) t.costs = src.file->costs;  // what the host file says a host costs and draws

  std::vector<NodeId> nics;  // host-major, NIC index order
  for (int h = 0; h < spec.hosts; ++h)
    for (NodeId n : t.host_nics(h)) nics.push_back(n);
  const int nics_per_host = src.nics;
  std::string fabric_desc;

  switch (f.kind) {
    case FabricKind::single_switch: {
      const NodeId sw = add_switch(t, "switch0", p);
      for (NodeId n : nics) connect(t, n, sw, p.nic_rate, 1, p.nic_latency, p.efficiency);
      fabric_desc = "one switch";
      break;
    }
    case FabricKind::fat_tree: {
      const int per_leaf = f.nics_per_leaf;
      const TreeShape shape = fat_tree_shape(f, static_cast<std::int64_t>(nics.size()));
      const std::vector<NodeId> leaves = add_switches(t, "leaf", static_cast<int>(shape.leaves), p);
      for (std::size_t i = 0; i < nics.size(); ++i)
        connect(t, nics[i], leaves[i / static_cast<std::size_t>(per_leaf)], p.nic_rate, 1, p.nic_latency,
                p.efficiency);
      if (shape.pods == 1) {
        join_up(t, leaves, add_switches(t, "spine", shape.spines, p), per_leaf, f.oversubscription, "spines",
                p);
        fabric_desc = fmt::format("two-level fat tree, {} leaves x {} NICs, {} spines, {}:1 oversubscribed",
                                  shape.leaves, per_leaf, shape.spines, f.oversubscription);
        break;
      }
      std::vector<NodeId> pod_spines;
      for (std::int64_t pod = 0; pod < shape.pods; ++pod) {
        const auto first = leaves.begin() + pod * f.leaves_per_pod;
        const std::vector<NodeId> pod_leaves(
            first, first + std::min<std::int64_t>(f.leaves_per_pod, leaves.end() - first));
        const std::vector<NodeId> sp = add_switches(t, fmt::format("pod{}-spine", pod), shape.spines, p);
        join_up(t, pod_leaves, sp, per_leaf, f.oversubscription, "spines", p);
        pod_spines.insert(pod_spines.end(), sp.begin(), sp.end());
      }
      join_up(t, pod_spines, add_switches(t, "core", shape.cores, p), shape.pod_lanes,
              f.core_oversubscription, "cores", p);
      const std::int64_t last = shape.leaves - (shape.pods - 1) * f.leaves_per_pod;
      fabric_desc = fmt::format(
          "three-level fat tree, {} pods x {} leaves{} x {} NICs, {} spines per pod ({}:1 oversubscribed), "
          "{} cores ({}:1)",
          shape.pods, f.leaves_per_pod, last < f.leaves_per_pod ? fmt::format(" (the last {})", last) : "",
          per_leaf, shape.spines, f.oversubscription, shape.cores, f.core_oversubscription);
      break;
    }
    case FabricKind::rail: {
      const int unit = f.hosts_per_unit;
      const int units = (spec.hosts + unit - 1) / unit;
      std::vector<NodeId> leaves;
      for (int u = 0; u < units; ++u)
        for (int k = 0; k < nics_per_host; ++k)
          leaves.push_back(add_switch(t, fmt::format("leaf{}", u * nics_per_host + k), p));
      for (int h = 0; h < spec.hosts; ++h) {
        const auto host_nics = t.host_nics(h);
        for (std::size_t k = 0; k < host_nics.size(); ++k)
          connect(t, host_nics[k], leaves[static_cast<std::size_t>((h / unit) * nics_per_host) + k],
                  p.nic_rate, 1, p.nic_latency, p.efficiency);
      }
      const int spines = f.spines > 0 ? f.spines : default_rail_spines(units, unit, f.oversubscription);
      join_up(t, leaves, add_switches(t, "spine", spines, p), unit, f.oversubscription, "spines", p);
      fabric_desc = fmt::format("rail-optimised, {} unit(s) of {} hosts, {} rail leaves, {} spines", units,
                                unit, leaves.size(), spines);
      break;
    }
  }
  t.description = fmt::format("{} x {}, {}, {} NICs", spec.hosts, base, fabric_desc,
                              human_string(p.nic_rate, RateStyle::bits));
  return t;
}

}  // namespace meshsim::topology
