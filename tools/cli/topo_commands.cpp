// `meshsim topo ...`: inspect, export and route topologies.

#include <fstream>
#include <map>
#include <memory>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "hardware/gpus.h"
#include "hardware/hosts.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/topology_source.h"
#include "topology/mesh.h"
#include "topology/nccl_xml.h"
#include "topology/presets.h"
#include "topology/summary.h"
#include "topology/topology_json.h"

namespace meshsim::cli {

namespace {

using topology::LinkKind;
using topology::NodeId;
using topology::Topology;

std::string rate(Bandwidth b, RateStyle s = RateStyle::bytes) {
  return human_string(b, s);
}

// A bandwidth as a number of GB/s, for columns whose header names the unit.
std::string gbps(Bandwidth b) {
  const double v = b.GBps_f();
  if (v >= 100) return fmt::format("{:.0f}", v);
  return v >= 10 ? fmt::format("{:.1f}", v) : fmt::format("{:.2f}", v);
}

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    fmt::print("{}", text);
    std::fflush(stdout);
    return;
  }
  write_file(path, [&](std::ostream& out) { out << text; });
}

// A topology file, written a link at a time; a file (not stdout) is read
// back, so it must stay within the input limit.
void write_topology(const std::string& path, const Topology& t) {
  if (path.empty() || path == "-") {
    write_stdout([&](std::ostream& out) { topology::write_topology_json(t, out); });
    return;
  }
  write_input_file(
      path, [&](std::ostream& out) { topology::write_topology_json(t, out); },
      "a preset with --hosts describes a large cluster without a file");
}

std::string show_text(const Topology& t, const topology::TopologySummary& s) {
  std::string out = fmt::format("{}: {}\n", t.name,
                                t.description.empty() ? std::string("(no description)") : t.description);
  std::map<std::string, int> models;
  for (NodeId g : t.gpus()) ++models[t.node(g).model.empty() ? "GPU" : t.node(g).model];
  std::string model_text;
  for (const auto& [m, n] : models)
    model_text += fmt::format("{}{} x {}", model_text.empty() ? "" : ", ", n, m);
  out += fmt::format("hosts {}, GPUs {}{}, nodes {}, links {}\n", t.host_count(), t.gpus().size(),
                     model_text.empty() ? "" : " (" + model_text + ")", t.node_count(), t.link_count());
  std::string kinds;
  for (const auto& [k, n] : s.nodes_by_kind) kinds += fmt::format("  {} {}", to_string(k), n);
  out += fmt::format("nodes by kind:{}\n\n", kinds);

  out += "links by kind (per direction):\n";
  Table links({"kind", "links", "lanes", "line GB/s", "effective GB/s"});
  for (const auto& [k, v] : s.links_by_kind)
    links.add({std::string(to_string(k)), std::to_string(v.links), std::to_string(v.lanes), gbps(v.line_rate),
               gbps(v.capacity)});
  out += links.render({false, true, true, true, true}) + "\n";

  // GPUs with the same figures share a row.
  using Key = std::tuple<std::string, int, std::int64_t, std::int64_t, std::int64_t, int>;
  std::map<Key, std::vector<NodeId>> groups;
  for (const auto& g : s.gpus)
    groups[Key{t.node(g.gpu).model, g.nvlink_links, g.nvlink_line.bps(), g.nvlink_capacity.bps(),
               g.nic_line.bps(), g.nic_shared_by}]
        .push_back(g.gpu);
  out += "per-GPU bandwidth (per direction):\n";
  Table gpus({"GPUs", "model", "NVLink lanes", "NVLink line", "NVLink eff.", "NIC line", "NIC shared by"});
  for (const auto& [k, members] : groups) {
    const auto& [model, lanes, nvl, nvc, nic, shared] = k;
    const std::string who = members.size() == t.gpus().size() ? fmt::format("all {}", members.size())
                            : members.size() == 1
                                ? t.node(members[0]).name
                                : fmt::format("{} ({}...)", members.size(), t.node(members[0]).name);
    gpus.add({who, model, std::to_string(lanes), rate(Bandwidth::bits_per_second(nvl)),
              rate(Bandwidth::bits_per_second(nvc)),
              nic > 0 ? rate(Bandwidth::bits_per_second(nic), RateStyle::bits) : std::string("-"),
              shared > 0 ? fmt::format("{} GPU{}", shared, shared == 1 ? "" : "s") : std::string("-")});
  }
  out += gpus.render({false, false, true, true, true, true, true}) + "\n";

  if (s.bisection) {
    out += fmt::format("bisection bandwidth ({}), per direction: {} line rate, {} effective\n",
                       s.bisection->cut, rate(s.bisection->line_rate), rate(s.bisection->capacity));
  } else {
    out += "bisection bandwidth: n/a (fewer than two GPUs)\n";
  }
  return out;
}

Json route_json(const Topology& t, const topology::Route& r) {
  Json hops = Json::array();
  for (const auto& h : r.hops) {
    const auto& l = t.link(h.link);
    hops.push_back(Json{{"from", t.node(h.from).name},
                        {"to", t.node(h.to).name},
                        {"kind", std::string(to_string(l.kind))},
                        {"count", l.count},
                        {"line_rate_GBps", l.line_rate().GBps_f()},
                        {"efficiency", l.efficiency},
                        {"capacity_GBps", l.capacity().GBps_f()},
                        {"latency_us", l.latency.microseconds()}});
  }
  return Json{{"from", t.node(r.src).name},
              {"to", t.node(r.dst).name},
              {"hops", std::move(hops)},
              {"latency_us", r.latency.microseconds()},
              {"bottleneck_GBps", r.bottleneck.GBps_f()}};
}

std::string route_text(const Topology& t, const topology::Route& r) {
  if (r.hops.empty())
    return fmt::format("{} -> {}: same device, no hops\n", t.node(r.src).name, t.node(r.dst).name);
  std::string out = fmt::format("route {} -> {}: {} hop{}, latency {}, bottleneck {} (effective)\n",
                                t.node(r.src).name, t.node(r.dst).name, r.hops.size(),
                                r.hops.size() == 1 ? "" : "s", human_string(r.latency), rate(r.bottleneck));
  Table tab({"#", "from", "to", "link", "line GB/s", "eff.", "effective GB/s", "latency"});
  for (std::size_t i = 0; i < r.hops.size(); ++i) {
    const auto& h = r.hops[i];
    const auto& l = t.link(h.link);
    tab.add({std::to_string(i + 1), t.node(h.from).name, t.node(h.to).name,
             l.count > 1 ? fmt::format("{} x{}", to_string(l.kind), l.count) : std::string(to_string(l.kind)),
             gbps(l.line_rate()), fmt::format("{:.3g}", l.efficiency), gbps(l.capacity()),
             human_string(l.latency)});
  }
  return out + tab.render({true, false, false, false, true, true, true, true});
}

std::string mesh_text(const Topology& t, const topology::DeviceMesh& m) {
  std::string out = fmt::format("mesh {} x {} ({} GPUs):\n", m.rows, m.cols, m.size());
  std::vector<std::string> header{""};
  for (int c = 0; c < m.cols; ++c) header.push_back(fmt::format("col {}", c));
  Table tab(header);
  for (int r = 0; r < m.rows; ++r) {
    std::vector<std::string> row{fmt::format("row {}", r)};
    for (int c = 0; c < m.cols; ++c) row.push_back(t.node(m.at(r, c)).name);
    tab.add(row);
  }
  return out + tab.render();
}

struct Common {
  TopologySource source;
  bool json = false;
  std::string output;
};

// One `topo` subcommand each.
void add_show(CLI::App* topo) {
  auto c = std::make_shared<Common>();
  auto* cmd =
      topo->add_subcommand("show", "Hosts, GPUs, links by kind, per-GPU NVLink/NIC bandwidth, bisection");
  c->source.add_to(*cmd);
  cmd->add_flag("--json", c->json, "Print one JSON document instead of tables");
  cmd->callback([c] {
    const Topology t = c->source.load();
    const auto s = topology::summarize(t);
    if (!c->json) return write_output("", show_text(t, s));
    // An object per GPU: 131,072 of them at the limit.
    write_stdout([&](std::ostream& out) { topology::write_summary_json(t, s, out); });
  });
}

void add_export(CLI::App* topo) {
  auto c = std::make_shared<Common>();
  auto* cmd = topo->add_subcommand("export", "Write the explicit meshsim.topology/1 form (nodes and links)");
  c->source.add_to(*cmd);
  cmd->add_option("-o,--out,--output", c->output, "Output file (default: stdout)");
  cmd->callback([c] { write_topology(c->output, c->source.load()); });
}

void add_dot(CLI::App* topo) {
  auto c = std::make_shared<Common>();
  auto* cmd = topo->add_subcommand("dot", "Write a Graphviz drawing (render with: dot -Tsvg)");
  c->source.add_to(*cmd);
  cmd->add_option("-o,--out,--output", c->output, "Output file (default: stdout)");
  cmd->callback([c] { write_output(c->output, topology::to_dot(c->source.load())); });
}

void add_route(CLI::App* topo) {
  struct RouteArgs : Common {
    std::string from, to;
  };
  auto c = std::make_shared<RouteArgs>();
  auto* cmd = topo->add_subcommand("route", "Print the route between two devices, hop by hop");
  c->source.add_to(*cmd);
  cmd->add_option("from", c->from, "Source device, e.g. h0/gpu0")->required();
  cmd->add_option("to", c->to, "Destination device, e.g. h1/gpu3")->required();
  cmd->add_flag("--json", c->json, "Print one JSON document instead of a table");
  cmd->callback([c] {
    const Topology t = c->source.load();
    const auto& r = t.route(t.at(c->from), t.at(c->to));
    write_output("", c->json ? dump_json(route_json(t, r)) : route_text(t, r));
  });
}

void add_mesh(CLI::App* topo) {
  struct MeshArgs : Common {
    std::string selector;
  };
  auto c = std::make_shared<MeshArgs>();
  auto* cmd = topo->add_subcommand("mesh", "Resolve a device-mesh selector into its 2-D grid of GPUs");
  c->source.add_to(*cmd);
  cmd->add_option("selector", c->selector, "all | hosts=0-1[,gpus=0-3] | h0/gpu0,h1/gpu0,... [,shape=RxC]")
      ->required();
  cmd->add_flag("--json", c->json, "Print one JSON document instead of a grid");
  cmd->callback([c] {
    const Topology t = c->source.load();
    const auto m = topology::select_mesh(t, c->selector);
    if (!c->json) return write_output("", mesh_text(t, m));
    Json rows = Json::array();
    for (int r = 0; r < m.rows; ++r) {
      Json row = Json::array();
      for (int col = 0; col < m.cols; ++col) row.push_back(t.node(m.at(r, col)).name);
      rows.push_back(std::move(row));
    }
    write_output("", dump_json(Json{{"rows", m.rows}, {"cols", m.cols}, {"devices", std::move(rows)}}));
  });
}

void add_import_nccl(CLI::App* topo) {
  struct ImportArgs {
    std::string file;
    topology::NcclImportOptions opts;
    std::string out;
  };
  auto c = std::make_shared<ImportArgs>();
  auto* cmd = topo->add_subcommand("import-nccl",
                                   "Turn an NCCL topology dump (NCCL_TOPO_DUMP_FILE) into one meshsim host");
  cmd->footer(
      "Make the dump on the machine with any NCCL program, e.g.\n"
      "  NCCL_TOPO_DUMP_FILE=topo.xml ./all_reduce_perf -g 8\n"
      "CPUs, PCIe bridges, GPUs, NVLinks (to GPUs, NVSwitches, the CPU) and NICs are imported;\n"
      "link rates follow the host presets (docs/topology-format.md, \"NCCL topology dumps\").\n"
      "Without --out, prints the summary `meshsim topo show` prints.");
  cmd->add_option("file", c->file, "NCCL topology dump (XML)")->required();
  cmd->add_option("--host", c->opts.host, "Host name; devices are named <host>/gpu0, ... (default h0)");
  cmd->add_option("--gpu-model", c->opts.gpu_model,
                  fmt::format("GPU model, e.g. {} (default: from the compute capability: sm {})",
                              hardware::kH200.name, hardware::sm_default_names()));
  cmd->add_option("-o,--out", c->out,
                  "Write the explicit meshsim.topology/1 file here ('-' for stdout) instead of the summary");
  cmd->callback([c] {
    const Topology t = topology::import_nccl_xml(c->file, c->opts);
    if (c->out.empty()) {
      const auto s = topology::summarize(t);
      return write_output("", show_text(t, s));
    }
    write_topology(c->out, t);
    if (c->out != "-")
      fmt::print("wrote {}: {} GPUs, {} nodes, {} links (check it with: meshsim topo show {})\n", c->out,
                 t.gpus().size(), t.node_count(), t.link_count(), c->out);
  });
}

void add_presets(CLI::App* topo) {
  auto c = std::make_shared<Common>();
  auto* cmd = topo->add_subcommand("presets", "List the host presets");
  cmd->add_flag("--json", c->json, "Print one JSON document instead of a table");
  cmd->callback([c] {
    Json list = Json::array();
    Table tab({"preset", "GPUs", "NICs", "NIC rate", "description"});
    for (const auto& p : hardware::host_presets()) {
      list.push_back(Json{{"name", std::string(p.name)},
                          {"gpus", p.gpus},
                          {"gpu_model", std::string(p.gpu->name)},
                          {"nics", p.nics},
                          {"nic_Gbps", static_cast<double>(p.nic_bandwidth.bps()) / 1e9},
                          {"description", std::string(p.summary)}});
      tab.add({std::string(p.name), std::to_string(p.gpus), std::to_string(p.nics),
               rate(p.nic_bandwidth, RateStyle::bits), std::string(p.summary)});
    }
    write_output(
        "", c->json ? dump_json(Json{{"presets", std::move(list)}}) : tab.render({false, true, true, true}));
  });
}

}  // namespace

void add_topo_commands(CLI::App& app) {
  auto* topo = app.add_subcommand("topo", "Inspect, export and route topologies");
  topo->require_subcommand(1);
  add_show(topo);
  add_export(topo);
  add_dot(topo);
  add_route(topo);
  add_mesh(topo);
  add_import_nccl(topo);
  add_presets(topo);
}

}  // namespace meshsim::cli
