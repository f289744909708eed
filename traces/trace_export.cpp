#include "traces/trace_export.h"

#include <map>
#include <set>

#include <fmt/format.h>

namespace meshsim::traces {

namespace {

double us(Time t) {
  return static_cast<double>(t.count_ps()) / 1e6;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string link_name(const topology::Topology& topo, topology::DirLinkId l) {
  return fmt::format("{}->{}", topo.node(topo.from(l)).name, topo.node(topo.to(l)).name);
}

Json chrome_trace(const plan::Plan& plan, const topology::Topology& topo, const plan::Timeline& r,
                  const std::vector<LinkUtilisation>& links) {
  Json events = Json::array();
  // Processes: pid 0 is the network, pid h+1 is host h.
  events.push_back(
      Json{{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "network"}}}});
  for (int h = 0; h < topo.host_count(); ++h)
    events.push_back(Json{{"ph", "M"},
                          {"name", "process_name"},
                          {"pid", h + 1},
                          {"tid", 0},
                          {"args", {{"name", topo.hosts()[static_cast<std::size_t>(h)].name}}}});
  // Threads: one per (device, stream) in use, numbered in (node, stream) order.
  std::vector<topology::NodeId> node;  // per plan device
  for (const std::string& name : plan.devices) node.push_back(topo.at(name));
  std::map<std::pair<topology::NodeId, int>, int> tids;
  for (const auto& t : plan.tasks)
    for (std::size_t d : t.devices) tids.emplace(std::pair{node[d], t.stream}, 0);
  int next = 1;
  for (auto& [key, tid] : tids) {
    tid = next++;
    events.push_back(
        Json{{"ph", "M"},
             {"name", "thread_name"},
             {"pid", topo.node(key.first).host + 1},
             {"tid", tid},
             {"args", {{"name", fmt::format("{} stream {}", topo.node(key.first).name, key.second)}}}});
  }
  const std::set<std::size_t> critical(r.critical_path.begin(), r.critical_path.end());
  int flow_id = 0;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    const auto& tm = r.tasks[i];
    for (std::size_t d : t.devices) {
      const topology::NodeId n = node[d];
      Json args{{"kind", std::string(to_string(t.kind))}, {"critical", critical.contains(i)}};
      if (t.kind != plan::TaskKind::compute) args["bytes"] = t.size.count();
      if (t.kind == plan::TaskKind::collective) args["op"] = std::string(to_string(t.op));
      events.push_back(Json{{"ph", "X"},
                            {"name", t.id},
                            {"cat", std::string(to_string(t.kind))},
                            {"pid", topo.node(n).host + 1},
                            {"tid", tids.at({n, t.stream})},
                            {"ts", us(tm.start)},
                            {"dur", us(tm.end - tm.start)},
                            {"args", std::move(args)}});
    }
    if (t.kind == plan::TaskKind::send) {
      const topology::NodeId a = node[t.devices[0]];
      const topology::NodeId b = node[t.devices[1]];
      events.push_back(Json{{"ph", "s"},
                            {"name", t.id},
                            {"cat", "send"},
                            {"id", flow_id},
                            {"pid", topo.node(a).host + 1},
                            {"tid", tids.at({a, t.stream})},
                            {"ts", us(tm.start)}});
      events.push_back(Json{{"ph", "f"},
                            {"bp", "e"},
                            {"name", t.id},
                            {"cat", "send"},
                            {"id", flow_id},
                            {"pid", topo.node(b).host + 1},
                            {"tid", tids.at({b, t.stream})},
                            {"ts", us(tm.end)}});
      ++flow_id;
    }
  }
  for (const LinkUtilisation& l : links) {
    const std::string name = "link " + link_name(topo, l.link);
    for (const auto& [at, fraction] : l.steps)
      events.push_back(Json{{"ph", "C"},
                            {"name", name},
                            {"pid", 0},
                            {"tid", 0},
                            {"ts", us(at)},
                            {"args", {{"utilisation", fraction}}}});
  }
  return Json{{"displayTimeUnit", "ns"}, {"traceEvents", std::move(events)}};
}

std::string task_csv(const plan::Plan& plan, const plan::Timeline& r) {
  const std::set<std::size_t> critical(r.critical_path.begin(), r.critical_path.end());
  std::string out = "id,kind,devices,stream,start_us,end_us,duration_us,bytes,critical\n";
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    std::string devices;
    for (std::size_t d : t.devices) devices += (devices.empty() ? "" : " ") + plan.devices[d];
    out += fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f},{},{}\n", csv_field(t.id), to_string(t.kind),
                       csv_field(devices), t.stream, us(r.tasks[i].start), us(r.tasks[i].end),
                       us(r.tasks[i].end - r.tasks[i].start),
                       t.kind == plan::TaskKind::compute ? 0 : t.size.count(), critical.contains(i) ? 1 : 0);
  }
  return out;
}

}  // namespace meshsim::traces
