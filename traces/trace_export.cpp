#include "traces/trace_export.h"

#include <map>
#include <ostream>
#include <set>
#include <sstream>

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

void write_task_csv(std::ostream& out, const plan::Plan& plan, const plan::Timeline& r) {
  const std::set<std::size_t> critical(r.critical_path.begin(), r.critical_path.end());
  out << "id,kind,devices,stream,start_us,end_us,duration_us,bytes,critical\n";
  std::string devices;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    devices.clear();
    for (std::size_t d : t.devices) {
      if (!devices.empty()) devices += ' ';
      devices += plan.devices[d];
    }
    out << fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f},{},{}\n", csv_field(t.id), to_string(t.kind),
                       csv_field(devices), t.stream, us(r.tasks[i].start), us(r.tasks[i].end),
                       us(r.tasks[i].end - r.tasks[i].start),
                       t.kind == plan::TaskKind::compute ? 0 : t.size.count(), critical.contains(i) ? 1 : 0);
  }
}

std::string task_csv(const plan::Plan& plan, const plan::Timeline& tl) {
  std::ostringstream out;
  write_task_csv(out, plan, tl);
  return std::move(out).str();
}

}  // namespace meshsim::traces
