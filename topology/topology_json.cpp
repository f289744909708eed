#include "topology/topology_json.h"

#include <memory>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_writer.h"
#include "core/unit_strings.h"
#include "hardware/hosts.h"
#include "hardware/network_parts.h"
#include "topology/cluster.h"
#include "topology/cost.h"
#include "topology/link_params.h"
#include "topology/placement.h"
#include "topology/presets.h"

namespace meshsim::topology {

namespace {

Time hop_latency(const JsonCursor& c) {
  const Time t = c.as_time();
  if (t < Time::zero()) c.fail("latency must not be negative");
  if (t > kMaxHopLatency) c.fail(fmt::format("latency {} is above the 1s limit per hop", exact_string(t)));
  return t;
}

Bandwidth lane_rate(const JsonCursor& c) {
  const Bandwidth b = c.as_bandwidth();
  if (b.bps() <= 0) c.fail("bandwidth must be greater than zero");
  if (b > kMaxLaneRate)
    c.fail(fmt::format("bandwidth {} is above the 100Tbps limit per lane", exact_string(b, RateStyle::bits)));
  return b;
}

FabricSpec fabric_from_json(const JsonCursor& c) {
  c.allow_only({"kind", "nics_per_leaf", "hosts_per_unit", "oversubscription", "spines", "leaves_per_pod",
                "cores", "core_oversubscription"});
  FabricSpec f;
  const JsonCursor kind = c["kind"];
  const auto k = fabric_kind_from(kind.as_string());
  if (!k)
    kind.fail(fmt::format("unknown fabric \"{}\" (expected switch, fat-tree or rail)", kind.as_string()));
  f.kind = *k;
  if (auto v = c.find("nics_per_leaf")) f.nics_per_leaf = static_cast<int>(v->as_int_in(1, 4096));
  if (auto v = c.find("hosts_per_unit")) f.hosts_per_unit = static_cast<int>(v->as_int_in(1, 4096));
  if (auto v = c.find("spines")) f.spines = static_cast<int>(v->as_int_in(1, 4096));
  if (auto v = c.find("leaves_per_pod")) f.leaves_per_pod = static_cast<int>(v->as_int_in(1, 4096));
  if (auto v = c.find("cores")) f.cores = static_cast<int>(v->as_int_in(1, 4096));
  for (const auto& [key, field] : {std::pair{"oversubscription", &f.oversubscription},
                                   std::pair{"core_oversubscription", &f.core_oversubscription}})
    if (auto v = c.find(key)) {
      *field = v->as_number();
      if (!(*field >= 1.0 && *field <= 1024.0))
        v->fail(fmt::format("{} must be between 1 and 1024, got {}", key, v->json().dump()));
    }
  return f;
}

// "hosts": name -> host index.
std::unordered_map<std::string, int> hosts_from_json(const JsonCursor& root, Topology& t) {
  std::unordered_map<std::string, int> host_index;
  if (auto hosts = root.find("hosts")) {
    for (std::size_t i = 0; i < hosts->size(); ++i) {
      const JsonCursor h = hosts->at(i);
      h.allow_only({"name", "preset"});
      const JsonCursor name_c = h["name"];
      std::string name = name_c.as_name();
      if (host_index.contains(name)) name_c.fail(fmt::format("duplicate host name \"{}\"", name));
      std::string preset;
      if (auto p = h.find("preset")) preset = p->as_string();
      host_index.emplace(name, t.add_host(Host{name, preset}));
    }
  }

  return host_index;
}

void nodes_from_json(const JsonCursor& root, const std::unordered_map<std::string, int>& host_index,
                     Topology& t) {
  const JsonCursor nodes = root["nodes"];
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const JsonCursor n = nodes.at(i);
    n.allow_only({"name", "kind", "host", "model"});
    Node node;
    const JsonCursor name_c = n["name"];
    node.name = name_c.as_name();
    if (t.find(node.name)) name_c.fail(fmt::format("duplicate node name \"{}\"", node.name));
    const JsonCursor kind_c = n["kind"];
    const auto kind = node_kind_from(kind_c.as_string());
    if (!kind)
      kind_c.fail(
          fmt::format("unknown node kind \"{}\" (expected gpu, nvswitch, pcie_switch, cpu, nic or switch)",
                      kind_c.as_string()));
    node.kind = *kind;
    if (auto h = n.find("host")) {
      if (node.kind == NodeKind::network_switch)
        h->fail("a network switch belongs to the fabric, not to a host; remove \"host\"");
      const std::string hn = h->as_string();
      auto it = host_index.find(hn);
      if (it == host_index.end()) h->fail(fmt::format("unknown host \"{}\" (declare it in \"hosts\")", hn));
      node.host = it->second;
    } else if (node.kind != NodeKind::network_switch) {
      n.fail(fmt::format("missing required key \"host\" (every {} belongs to a host)", kind_c.as_string()));
    }
    if (auto m = n.find("model")) {
      if (node.kind != NodeKind::gpu && node.kind != NodeKind::network_switch)
        m->fail("only GPUs and network switches have a model");
      node.model = m->as_string();
      if (node.kind == NodeKind::network_switch && hardware::find_switch(node.model) == nullptr)
        m->fail(fmt::format("unknown switch model \"{}\" (known: {})", node.model, hardware::switch_names()));
    }
    t.add_node(std::move(node));
  }
}

// Which node kinds a link of its kind may join, and whether it may cross hosts.
void check_link_ends(const JsonCursor& kind_c, const Link& link, const Topology& t) {
  const Node& na = t.node(link.a);
  const Node& nb = t.node(link.b);
  auto kinds_ok = [&](std::initializer_list<NodeKind> ok) {
    auto in = [&](NodeKind k) { return std::find(ok.begin(), ok.end(), k) != ok.end(); };
    return in(na.kind) && in(nb.kind);
  };
  switch (link.kind) {
    case LinkKind::nvlink: {
      // NVLink also joins a GPU to its own CPU (POWER9 NVLink, Grace
      // NVLink-C2C), as NCCL topology dumps describe.
      const bool gpu_cpu = (na.kind == NodeKind::gpu && nb.kind == NodeKind::cpu) ||
                           (na.kind == NodeKind::cpu && nb.kind == NodeKind::gpu);
      if (!kinds_ok({NodeKind::gpu, NodeKind::nvswitch}) && !gpu_cpu)
        kind_c.fail(fmt::format("an nvlink joins GPUs and NVSwitches (or a GPU and its CPU), not {} and {}",
                                to_string(na.kind), to_string(nb.kind)));
      if (gpu_cpu && na.host != nb.host)
        kind_c.fail(fmt::format("an nvlink to a CPU cannot join two hosts ({} and {})", na.name, nb.name));
      break;
    }
    case LinkKind::pcie:
      if (!kinds_ok({NodeKind::gpu, NodeKind::pcie_switch, NodeKind::cpu, NodeKind::nic}))
        kind_c.fail(fmt::format("a pcie link joins GPUs, PCIe switches, CPUs and NICs, not {} and {}",
                                to_string(na.kind), to_string(nb.kind)));
      break;
    case LinkKind::smp:
      if (!kinds_ok({NodeKind::cpu}))
        kind_c.fail(
            fmt::format("an smp link joins two CPUs, not {} and {}", to_string(na.kind), to_string(nb.kind)));
      break;
    case LinkKind::network:
      if (!kinds_ok({NodeKind::nic, NodeKind::network_switch}))
        kind_c.fail(fmt::format("a network link joins NICs and switches, not {} and {}", to_string(na.kind),
                                to_string(nb.kind)));
      break;
  }
  if (na.host != nb.host && link.kind != LinkKind::network && link.kind != LinkKind::nvlink)
    kind_c.fail(
        fmt::format("a {} link cannot join two hosts ({} and {})", to_string(link.kind), na.name, nb.name));
}

// count, PCIe gen/width, bandwidth, latency and efficiency of link `l`.
void link_rates_from_json(const JsonCursor& l, Link& link) {
  if (auto c = l.find("count")) link.count = static_cast<int>(c->as_int_in(1, kMaxLanes));
  const bool pcie = link.kind == LinkKind::pcie;
  for (const char* key : {"gen", "width"})
    if (!pcie && l.has(key)) l[key].fail(fmt::format("\"{}\" applies to pcie links only", key));
  if (pcie) {
    if (auto g = l.find("gen")) link.pcie_gen = static_cast<int>(g->as_int_in(1, 6));
    if (auto w = l.find("width")) {
      link.pcie_width = static_cast<int>(w->as_int_in(1, 32));
      if ((link.pcie_width & (link.pcie_width - 1)) != 0)
        w->fail(fmt::format("PCIe width must be 1, 2, 4, 8, 16 or 32, got {}", link.pcie_width));
    }
  }
  if (auto bw = l.find("bandwidth")) {
    link.bandwidth = lane_rate(*bw);
  } else if (pcie && link.pcie_gen >= 3 && link.pcie_width > 0) {
    // Gen3 ≈ 1 GB/s per lane, doubling each generation (topology/link_params.h).
    link.bandwidth = pcie_lane_rate(link.pcie_gen) * link.pcie_width;
  } else {
    l.fail(pcie ? "missing required key \"bandwidth\" (or give \"gen\" >= 3 and \"width\")"
                : "missing required key \"bandwidth\"");
  }
  link.latency = hop_latency(l["latency"]);
  if (auto e = l.find("efficiency")) {
    link.efficiency = e->as_number();
    if (!(link.efficiency > 0.0 && link.efficiency <= 1.0))
      e->fail(fmt::format("efficiency must be in (0, 1], got {}", e->json().dump()));
  }
  if (link.capacity().bps() <= 0)
    l.fail("capacity (bandwidth x count x efficiency) rounds to zero bits per second");
}

Link link_from_json(const JsonCursor& l, const Topology& t) {
  l.allow_only({"kind", "a", "b", "count", "bandwidth", "latency", "efficiency", "gen", "width"});
  Link link;
  const JsonCursor kind_c = l["kind"];
  const auto kind = link_kind_from(kind_c.as_string());
  if (!kind)
    kind_c.fail(
        fmt::format("unknown link kind \"{}\" (expected nvlink, pcie, smp or network)", kind_c.as_string()));
  link.kind = *kind;
  auto endpoint = [&](std::string_view key) {
    const JsonCursor c = l[key];
    const std::string name = c.as_string();
    const auto id = t.find(name);
    if (!id) c.fail(fmt::format("unknown node \"{}\"", name));
    return *id;
  };
  link.a = endpoint("a");
  link.b = endpoint("b");
  if (link.a == link.b) l["b"].fail("a link must join two different nodes");
  check_link_ends(kind_c, link, t);
  link_rates_from_json(l, link);
  return link;
}

Topology explicit_from_json(const JsonCursor& root) {
  Topology t;
  if (auto v = root.find("name")) t.name = v->as_string();
  if (auto v = root.find("description")) t.description = v->as_string();
  const auto host_index = hosts_from_json(root, t);
  nodes_from_json(root, host_index, t);
  const JsonCursor links = root["links"];
  for (std::size_t i = 0; i < links.size(); ++i) t.add_link(link_from_json(links.at(i), t));
  return t;
}

}  // namespace

namespace {
// A cluster's "host": a preset's name, or a path (relative to this file)
// ending in .json: the explicit topology of the one host to repeat.
void host_from_json(const JsonCursor& host, ClusterSpec& s) {
  s.host_preset = host.as_string();
  if (hardware::find_host_preset(s.host_preset) != nullptr) return;
  if (!s.host_preset.ends_with(".json"))
    host.fail(fmt::format("unknown host preset \"{}\" (known: {}; or a host file ending in .json)",
                          s.host_preset, hardware::host_preset_names()));
  const std::string path = resolve_beside(host.file(), s.host_preset);
  Json j;
  try {
    j = read_json_file(path);
  } catch (const Error& e) {
    host.fail(fmt::format("cannot read the host file: {}", e.what()));
  }
  if (j.is_object() && j.contains("cluster"))
    host.fail(fmt::format("{} is a cluster; a host file describes one host in the explicit form", path));
  try {
    s.host_file = std::make_shared<const Topology>(topology_from_json(j, path));
  } catch (const ConfigError& e) {
    host.fail(fmt::format("in the host file: {}", e.what()));
  }
  s.host_preset = path;
}
}  // namespace

ClusterSpec cluster_spec_from_json(const JsonCursor& c) {
  c.allow_only({"host", "hosts", "fabric", "nic_bandwidth", "nic_latency", "nic_efficiency", "switch_latency",
                "switch"});
  ClusterSpec s;
  host_from_json(c["host"], s);
  s.hosts = static_cast<int>(c["hosts"].as_int_in(1, kMaxHosts));
  if (auto f = c.find("fabric")) s.fabric = fabric_from_json(*f);
  if (auto v = c.find("nic_bandwidth")) s.nic_bandwidth = lane_rate(*v);
  if (auto v = c.find("nic_latency")) s.nic_latency = hop_latency(*v);
  if (auto v = c.find("nic_efficiency")) {
    s.nic_efficiency = v->as_number();
    if (!(*s.nic_efficiency > 0.0 && *s.nic_efficiency <= 1.0))
      v->fail(fmt::format("efficiency must be in (0, 1], got {}", v->json().dump()));
  }
  if (auto v = c.find("switch_latency")) s.switch_latency = hop_latency(*v);
  if (auto v = c.find("switch")) {
    s.switch_model = v->as_string();
    if (hardware::find_switch(s.switch_model) == nullptr)
      v->fail(
          fmt::format("unknown switch model \"{}\" (known: {})", s.switch_model, hardware::switch_names()));
  }
  return s;
}

namespace {
// The cluster form or the explicit form (their keys checked by the caller).
Topology topology_body_from_json(const JsonCursor& root) {
  if (auto cluster = root.find("cluster")) {
    for (const char* key : {"hosts", "nodes", "links"})
      if (root.has(key))
        root[key].fail(
            "a topology has either \"cluster\" or explicit \"hosts\"/\"nodes\"/\"links\", not both");
    ClusterSpec spec = cluster_spec_from_json(*cluster);
    if (auto n = root.find("name")) spec.name = n->as_string();
    Topology t = [&] {
      try {
        return build_cluster(spec);
      } catch (const UsageError& e) {
        cluster->fail(e.what());
      }
    }();
    if (auto d = root.find("description")) t.description = d->as_string();
    return t;
  }
  return explicit_from_json(root);
}
}  // namespace

Topology topology_from_json(const Json& j, const std::string& file) {
  const JsonCursor root(j, file);
  if (!j.is_object()) root.fail(fmt::format("a topology is a JSON object, got {}", json_type_name(j)));
  const JsonCursor fmt_c = root["format"];
  if (fmt_c.as_string() != kTopologyFormat)
    fmt_c.fail(fmt::format("unsupported format \"{}\" (this meshsim reads \"{}\")", fmt_c.as_string(),
                           kTopologyFormat));
  root.allow_only({"format", "name", "description", "routing", "placement", "sharp", "price_per_gpu_hour",
                   "host_watts", "switch_watts", "cluster", "hosts", "nodes", "links"});
  Topology t = topology_body_from_json(root);
  if (auto r = root.find("routing")) {
    const auto p = routing_policy_from(r->as_string());
    if (!p)
      r->fail(
          fmt::format("unknown routing \"{}\" (expected {})", r->as_string(), kRoutingPolicyNames.list()));
    t.routing = *p;
  }
  if (auto p = root.find("placement")) t.placement = placement_from_json(*p);
  if (auto v = root.find("sharp")) t.sharp = v->as_bool();
  if (auto v = root.find("price_per_gpu_hour")) t.costs.gpu_hour_usd = v->as_number_in(0, kMaxGpuHourUsd);
  if (auto v = root.find("host_watts")) t.costs.host_watts = v->as_number_in(0, kMaxWatts);
  if (auto v = root.find("switch_watts")) t.costs.switch_watts = v->as_number_in(0, kMaxWatts);
  return t;
}

Topology load_topology_file(const std::string& file) {
  return topology_from_json(read_json_file(file), file);
}

namespace {

// The document without its nodes and links (empty arrays in their place).
Json topology_head_json(const Topology& t) {
  Json j;
  j["format"] = kTopologyFormat;
  j["name"] = t.name;
  j["description"] = t.description;
  if (t.routing != RoutingPolicy::ecmp) j["routing"] = std::string(to_string(t.routing));
  if (!t.placement.empty()) j["placement"] = t.placement;
  if (t.sharp) j["sharp"] = true;
  if (t.costs.gpu_hour_usd) j["price_per_gpu_hour"] = *t.costs.gpu_hour_usd;
  if (t.costs.host_watts) j["host_watts"] = *t.costs.host_watts;
  if (t.costs.switch_watts) j["switch_watts"] = *t.costs.switch_watts;
  Json hosts = Json::array();
  for (const Host& h : t.hosts()) {
    Json o;
    o["name"] = h.name;
    if (!h.preset.empty()) o["preset"] = h.preset;
    hosts.push_back(std::move(o));
  }
  j["hosts"] = std::move(hosts);
  j["nodes"] = Json::array();
  j["links"] = Json::array();
  return j;
}

Json node_json(const Topology& t, const Node& n) {
  Json o;
  o["name"] = n.name;
  o["kind"] = std::string(to_string(n.kind));
  if (n.host >= 0) o["host"] = t.hosts()[static_cast<std::size_t>(n.host)].name;
  if (!n.model.empty()) o["model"] = n.model;
  return o;
}

Json link_json(const Topology& t, const Link& l) {
  Json o;
  o["kind"] = std::string(to_string(l.kind));
  o["a"] = t.node(l.a).name;
  o["b"] = t.node(l.b).name;
  o["count"] = l.count;
  o["bandwidth"] =
      exact_string(l.bandwidth, l.kind == LinkKind::network ? RateStyle::bits : RateStyle::bytes);
  o["latency"] = exact_string(l.latency);
  o["efficiency"] = l.efficiency;
  if (l.kind == LinkKind::pcie) {
    if (l.pcie_gen > 0) o["gen"] = l.pcie_gen;
    if (l.pcie_width > 0) o["width"] = l.pcie_width;
  }
  return o;
}

}  // namespace

Json topology_to_json(const Topology& t) {
  Json j = topology_head_json(t);
  Json& nodes = j["nodes"];
  for (const Node& n : t.nodes()) nodes.push_back(node_json(t, n));
  Json& links = j["links"];
  for (const Link& l : t.links()) links.push_back(link_json(t, l));
  return j;
}

void write_topology_json(const Topology& t, std::ostream& out) {
  JsonWriter w(out, topology_head_json(t));
  w.begin_array("nodes");
  for (const Node& n : t.nodes()) w.add(node_json(t, n));
  w.end_array();
  w.begin_array("links");
  for (const Link& l : t.links()) w.add(link_json(t, l));
  w.end_array();
  w.finish();
}

}  // namespace meshsim::topology
