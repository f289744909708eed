#include "topology/summary.h"

#include <boost/graph/push_relabel_max_flow.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "core/json_writer.h"
#include "core/unit_strings.h"

namespace meshsim::topology {

namespace {

// Capacities enter the flow algorithm in kb/s (rounded up), which keeps its
// int64 excess sums far from overflow on the largest clusters.
std::int64_t kbps(Bandwidth b) {
  return (b.bps() + 999) / 1000;
}

// Max flow from `sources` to `sinks` with each directed link's capacity
// given by `cap`; GPUs other than sources and sinks do not forward.
template <typename Cap>
Bandwidth max_flow(const Topology& t, const std::vector<NodeId>& sources, const std::vector<NodeId>& sinks,
                   Cap cap) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using G = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, std::int64_t,
                      boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const std::size_t n = t.node_count();
  G g(n + 2);
  const auto src = n;
  const auto snk = n + 1;
  auto capm = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  auto add = [&](std::size_t u, std::size_t v, std::int64_t c) {
    auto e = boost::add_edge(u, v, g).first;
    auto r = boost::add_edge(v, u, g).first;
    capm[e] = c;
    capm[r] = 0;
    rev[e] = r;
    rev[r] = e;
  };
  // Terminal edges carry at most what the GPU's own links can: the sum of
  // their capacities. (An "infinite" capacity would overflow the flow
  // algorithm's int64 excess sums.)
  std::vector<std::int64_t> degree_cap(n, 0);
  for (const Link& l : t.links()) {
    degree_cap[l.a] += kbps(cap(l));
    degree_cap[l.b] += kbps(cap(l));
  }
  for (NodeId s : sources) add(src, s, degree_cap[s]);
  for (NodeId d : sinks) add(d, snk, degree_cap[d]);
  std::vector<bool> terminal(n, false);
  for (NodeId v : sources) terminal[v] = true;
  for (NodeId v : sinks) terminal[v] = true;
  for (const Link& l : t.links()) {
    // A transit GPU cannot forward: drop links into non-terminal GPUs.
    const bool a_ok = t.node(l.a).kind != NodeKind::gpu || terminal[l.a];
    const bool b_ok = t.node(l.b).kind != NodeKind::gpu || terminal[l.b];
    if (!a_ok || !b_ok) continue;
    const std::int64_t c = kbps(cap(l));
    add(l.a, l.b, c);
    add(l.b, l.a, c);
  }
  return Bandwidth::bits_per_second(boost::push_relabel_max_flow(g, src, snk) * 1000);
}

std::string range_text(int lo, int hi) {
  return lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
}

std::optional<Bisection> bisection(const Topology& t) {
  std::vector<NodeId> a;
  std::vector<NodeId> b;
  std::string cut;
  int hosts_with_gpus = 0;
  for (int h = 0; h < t.host_count(); ++h) hosts_with_gpus += t.host_gpus(h).empty() ? 0 : 1;
  if (hosts_with_gpus >= 2) {
    std::vector<int> gpu_hosts;  // hosts without GPUs take no side
    for (int h = 0; h < t.host_count(); ++h)
      if (!t.host_gpus(h).empty()) gpu_hosts.push_back(h);
    const std::size_t half = gpu_hosts.size() / 2;
    for (std::size_t i = 0; i < gpu_hosts.size(); ++i)
      for (NodeId g : t.host_gpus(gpu_hosts[i])) (i < half ? a : b).push_back(g);
    cut = fmt::format("hosts {} | hosts {}", range_text(gpu_hosts.front(), gpu_hosts[half - 1]),
                      range_text(gpu_hosts[half], gpu_hosts.back()));
  } else {
    const auto& g = t.gpus();
    if (g.size() < 2) return std::nullopt;
    const std::size_t half = g.size() / 2;
    a.assign(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(half));
    b.assign(g.begin() + static_cast<std::ptrdiff_t>(half), g.end());
    cut = fmt::format("GPUs {} | GPUs {}", range_text(0, static_cast<int>(half) - 1),
                      range_text(static_cast<int>(half), static_cast<int>(g.size()) - 1));
  }
  if (a.empty() || b.empty()) return std::nullopt;
  return Bisection{cut, max_flow(t, a, b, [](const Link& l) { return l.line_rate(); }),
                   max_flow(t, a, b, [](const Link& l) { return l.capacity(); })};
}

}  // namespace

TopologySummary summarize(const Topology& t) {
  TopologySummary s;
  for (const Node& n : t.nodes()) ++s.nodes_by_kind[n.kind];
  std::vector<GpuSummary> per_node(t.node_count());
  std::vector<Bandwidth> nic_line(t.node_count());
  for (const Link& l : t.links()) {
    auto& k = s.links_by_kind[l.kind];
    ++k.links;
    k.lanes += l.count;
    k.line_rate += l.line_rate();
    k.capacity += l.capacity();
    for (NodeId end : {l.a, l.b}) {
      if (l.kind == LinkKind::nvlink && t.node(end).kind == NodeKind::gpu) {
        per_node[end].nvlink_links += l.count;
        per_node[end].nvlink_line += l.line_rate();
        per_node[end].nvlink_capacity += l.capacity();
      }
      if (l.kind == LinkKind::network && t.node(end).kind == NodeKind::nic) nic_line[end] += l.line_rate();
    }
  }
  std::map<NodeId, int> sharers;
  for (NodeId g : t.gpus())
    if (auto nic = t.nic_of(g)) ++sharers[*nic];
  for (NodeId g : t.gpus()) {
    GpuSummary gs = per_node[g];
    gs.gpu = g;
    gs.nic = t.nic_of(g);
    if (gs.nic) {
      gs.nic_line = nic_line[*gs.nic];
      gs.nic_shared_by = sharers[*gs.nic];
    }
    s.gpus.push_back(gs);
  }
  s.bisection = bisection(t);
  return s;
}

namespace {

Json gpu_summary_json(const Topology& t, const GpuSummary& g) {
  Json o{{"name", t.node(g.gpu).name},
         {"host", t.node(g.gpu).host},
         {"model", t.node(g.gpu).model},
         {"nvlink_links", g.nvlink_links},
         {"nvlink_line_GBps", g.nvlink_line.GBps_f()},
         {"nvlink_capacity_GBps", g.nvlink_capacity.GBps_f()}};
  o["nic"] = g.nic ? Json(t.node(*g.nic).name) : Json(nullptr);
  o["nic_line_Gbps"] = static_cast<double>(g.nic_line.bps()) / 1e9;
  o["nic_shared_by"] = g.nic_shared_by;
  return o;
}

// The summary without its per-GPU details (an empty array in their place).
Json summary_head_json(const Topology& t, const TopologySummary& s) {
  Json j;
  j["name"] = t.name;
  j["description"] = t.description;
  j["hosts"] = t.host_count();
  j["gpus"] = t.gpus().size();
  Json nodes;
  for (const auto& [k, n] : s.nodes_by_kind) nodes[std::string(to_string(k))] = n;
  j["nodes_by_kind"] = std::move(nodes);
  Json links = Json::array();
  for (const auto& [k, v] : s.links_by_kind) {
    links.push_back(Json{{"kind", std::string(to_string(k))},
                         {"links", v.links},
                         {"lanes", v.lanes},
                         {"line_rate_GBps", v.line_rate.GBps_f()},
                         {"capacity_GBps", v.capacity.GBps_f()}});
  }
  j["links_by_kind"] = std::move(links);
  j["gpu_details"] = Json::array();
  if (s.bisection) {
    j["bisection"] = Json{{"cut", s.bisection->cut},
                          {"line_rate_GBps", s.bisection->line_rate.GBps_f()},
                          {"capacity_GBps", s.bisection->capacity.GBps_f()}};
  } else {
    j["bisection"] = nullptr;
  }
  return j;
}

}  // namespace

Json summary_to_json(const Topology& t, const TopologySummary& s) {
  Json j = summary_head_json(t, s);
  Json& gpus = j["gpu_details"];
  for (const GpuSummary& g : s.gpus) gpus.push_back(gpu_summary_json(t, g));
  return j;
}

void write_summary_json(const Topology& t, const TopologySummary& s, std::ostream& out) {
  JsonWriter w(out, summary_head_json(t, s));
  w.begin_array("gpu_details");
  for (const GpuSummary& g : s.gpus) w.add(gpu_summary_json(t, g));
  w.end_array();
  w.finish();
}

std::string to_dot(const Topology& t) {
  auto quoted = [](const std::string& name) {
    std::string q;
    for (char c : name) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q;
  };
  std::string out =
      fmt::format("graph \"{}\" {{\n  graph [rankdir=TB, fontname=\"Helvetica\"];\n", quoted(t.name));
  out += "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n";
  auto shape = [](NodeKind k) {
    switch (k) {
      case NodeKind::gpu: return "box, style=filled, fillcolor=\"#a6d96a\"";
      case NodeKind::nvswitch: return "octagon, style=filled, fillcolor=\"#fdae61\"";
      case NodeKind::pcie_switch: return "diamond";
      case NodeKind::cpu: return "box3d";
      case NodeKind::nic: return "cds, style=filled, fillcolor=\"#abd9e9\"";
      case NodeKind::network_switch: return "hexagon, style=filled, fillcolor=\"#2c7bb6\", fontcolor=white";
    }
    return "ellipse";
  };
  std::vector<std::vector<NodeId>> by_host(static_cast<std::size_t>(t.host_count()) + 1);  // last: fabric
  for (NodeId i = 0; i < t.node_count(); ++i) {
    const int h = t.node(i).host;
    by_host[h < 0 ? by_host.size() - 1 : static_cast<std::size_t>(h)].push_back(i);
  }
  for (std::size_t h = 0; h < by_host.size(); ++h) {
    const bool fabric = h + 1 == by_host.size();
    const std::string indent = fabric ? "  " : "    ";
    if (!fabric)
      out += fmt::format("  subgraph \"cluster_{0}\" {{\n    label=\"{0}\";\n", quoted(t.hosts()[h].name));
    for (NodeId i : by_host[h])
      out += fmt::format("{}n{} [label=\"{}\", shape={}];\n", indent, i, quoted(t.node(i).name),
                         shape(t.node(i).kind));
    if (!fabric) out += "  }\n";
  }
  for (const Link& l : t.links()) {
    const char* color = l.kind == LinkKind::nvlink    ? "#1a9641"
                        : l.kind == LinkKind::network ? "#2c7bb6"
                                                      : "#777777";
    const std::string rate =
        human_string(l.line_rate(), l.kind == LinkKind::network ? RateStyle::bits : RateStyle::bytes);
    out += fmt::format("  n{} -- n{} [label=\"{}{} {}\", color=\"{}\", penwidth={}];\n", l.a, l.b,
                       to_string(l.kind), l.count > 1 ? fmt::format(" x{}", l.count) : std::string(), rate,
                       color, l.count > 1 ? 2 : 1);
  }
  out += "}\n";
  return out;
}

}  // namespace meshsim::topology
