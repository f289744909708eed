// The Chrome trace of trace_export.h, written event by event.

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "traces/trace_export.h"

namespace meshsim::traces {

namespace {

using topology::NodeId;

// A JSON number as the JSON library writes a double: shortest round trip,
// with ".0" when it would read as an integer.
std::string num(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// Microseconds, the trace's time unit.
std::string us(Time t) {
  return num(static_cast<double>(t.count_ps()) / 1e6);
}

// A JSON string literal.
std::string quoted(const std::string& s) {
  return Json(s).dump();
}

// Writes the events, comma-separated, counting them.
class Events {
 public:
  explicit Events(std::ostream& out) : out_(out) {}
  void add(const std::string& event) {
    out_ << (count_ == 0 ? "\n" : ",\n") << event;
    ++count_;
  }
  [[nodiscard]] std::size_t count() const { return count_; }

  void process(int pid, const std::string& name) {
    add(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid,
                    quoted(name)));
  }
  void sort_index(int pid, int index) {
    add(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
                    pid, index));
  }
  void thread(int pid, int tid, const std::string& name) {
    add(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, tid,
                    quoted(name)));
  }
  // A counter track's step to `value` at `at`.
  void counter(int pid, const std::string& name, Time at, const char* key, double value) {
    add(fmt::format(R"({{"ph":"C","name":{},"pid":{},"tid":0,"ts":{},"args":{{"{}":{}}}}})", quoted(name),
                    pid, us(at), key, num(value)));
  }

 private:
  std::ostream& out_;
  std::size_t count_ = 0;
};

int pid_of(const topology::Topology& topo, NodeId n) {
  return topo.node(n).host + 1;
}

// Whether a directed link leaves a host for the fabric or another host.
bool between_hosts(const topology::Topology& topo, topology::DirLinkId l) {
  return topo.link(topology::Topology::link_of(l)).kind == topology::LinkKind::network &&
         topo.node(topo.from(l)).host != topo.node(topo.to(l)).host;
}

// Task slices (one per device, or on the first device only), send arrows.
void task_events(Events& ev, const plan::Plan& plan, const topology::Topology& topo, const plan::Timeline& r,
                 const std::vector<NodeId>& node, bool every_device) {
  std::map<std::pair<NodeId, int>, int> tids;  // threads numbered in (node, stream) order
  for (const auto& t : plan.tasks) {
    const std::size_t shown = every_device ? t.devices.size() : 1;
    for (std::size_t k = 0; k < shown; ++k) tids.emplace(std::pair{node[t.devices[k]], t.stream}, 0);
    if (t.kind == plan::TaskKind::send) tids.emplace(std::pair{node[t.devices[1]], t.stream}, 0);
  }
  int next = 1;
  for (auto& [key, tid] : tids) {
    tid = next++;
    ev.thread(pid_of(topo, key.first), tid,
              fmt::format("{} stream {}", topo.node(key.first).name, key.second));
  }
  const std::set<std::size_t> critical(r.critical_path.begin(), r.critical_path.end());
  int flow_id = 0;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    const auto& tm = r.tasks[i];
    std::string args = fmt::format(R"("kind":"{}","critical":{})", to_string(t.kind), critical.contains(i));
    if (t.kind != plan::TaskKind::compute) args += fmt::format(R"(,"bytes":{})", t.size.count());
    if (t.kind == plan::TaskKind::collective) args += fmt::format(R"(,"op":"{}")", to_string(t.op));
    const std::size_t shown = every_device ? t.devices.size() : 1;
    for (std::size_t k = 0; k < shown; ++k) {
      const NodeId n = node[t.devices[k]];
      ev.add(
          fmt::format(R"({{"ph":"X","name":{},"cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
                      quoted(t.id), to_string(t.kind), pid_of(topo, n), tids.at({n, t.stream}), us(tm.start),
                      us(tm.end - tm.start), args));
    }
    if (t.kind != plan::TaskKind::send) continue;
    const NodeId a = node[t.devices[0]];
    const NodeId b = node[t.devices[1]];
    ev.add(fmt::format(R"({{"ph":"s","name":{},"cat":"send","id":{},"pid":{},"tid":{},"ts":{}}})",
                       quoted(t.id), flow_id, pid_of(topo, a), tids.at({a, t.stream}), us(tm.start)));
    ev.add(fmt::format(R"({{"ph":"f","bp":"e","name":{},"cat":"send","id":{},"pid":{},"tid":{},"ts":{}}})",
                       quoted(t.id), flow_id, pid_of(topo, b), tids.at({b, t.stream}), us(tm.end)));
    ++flow_id;
  }
}

// A step function from (time, change) pairs: one counter point per time.
void step_counter(Events& ev, int pid, const std::string& name, const char* key,
                  std::vector<std::pair<Time, double>> changes, double scale) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  double level = 0;
  for (std::size_t k = 0; k < changes.size(); ++k) {
    level += changes[k].second;
    if (k + 1 < changes.size() && changes[k + 1].first == changes[k].first) continue;
    ev.counter(pid, name, changes[k].first, key, scale > 0 ? level / scale : level);
  }
}

// Per host: GPUs computing, GPUs communicating, network egress.
void host_events(Events& ev, const plan::Plan& plan, const topology::Topology& topo, const plan::Timeline& r,
                 const std::vector<NodeId>& node, const std::vector<LinkUtilisation>& links) {
  const auto hosts = static_cast<std::size_t>(topo.host_count());
  std::vector<std::vector<std::pair<Time, double>>> compute(hosts), comm(hosts), egress(hosts);
  for (std::size_t i = 0; i < plan.tasks.size(); ++i)
    for (std::size_t d : plan.tasks[i].devices) {
      const int h = topo.node(node[d]).host;
      if (h < 0) continue;
      auto& series =
          (plan.tasks[i].kind == plan::TaskKind::compute ? compute : comm)[static_cast<std::size_t>(h)];
      series.emplace_back(r.tasks[i].start, 1.0);
      series.emplace_back(r.tasks[i].end, -1.0);
    }
  std::vector<double> capacity(hosts, 0.0);  // of all the host's links into the fabric
  for (topology::DirLinkId d = 0; d < 2 * topo.link_count(); ++d) {
    const int h = topo.node(topo.from(d)).host;
    if (h >= 0 && between_hosts(topo, d))
      capacity[static_cast<std::size_t>(h)] +=
          topo.link(topology::Topology::link_of(d)).capacity().bytes_per_second_f();
  }
  for (const LinkUtilisation& l : links) {
    const int h = topo.node(topo.from(l.link)).host;
    if (h < 0 || !between_hosts(topo, l.link)) continue;
    const double cap = topo.link(topology::Topology::link_of(l.link)).capacity().bytes_per_second_f();
    double before = 0;
    for (const auto& [at, fraction] : l.steps) {
      egress[static_cast<std::size_t>(h)].emplace_back(at, (fraction - before) * cap);
      before = fraction;
    }
  }
  for (std::size_t h = 0; h < hosts; ++h) {
    const auto pid = static_cast<int>(h) + 1;
    const std::string& name = topo.hosts()[h].name;
    step_counter(ev, pid, name + " GPUs computing", "gpus", std::move(compute[h]), 0);
    step_counter(ev, pid, name + " GPUs communicating", "gpus", std::move(comm[h]), 0);
    if (capacity[h] > 0)
      step_counter(ev, pid, name + " network out", "utilisation", std::move(egress[h]), capacity[h]);
  }
}

}  // namespace

std::size_t write_chrome_trace(std::ostream& out, const plan::Plan& plan, const topology::Topology& topo,
                               const plan::Timeline& r, const std::vector<LinkUtilisation>& links,
                               TraceDetail detail, const std::vector<HostGroup>& groups) {
  out << R"({"displayTimeUnit":"ns","traceEvents":[)";
  Events ev(out);
  // Processes: pid 0 is the network, pid h+1 is host h; a group's hosts
  // are named after it and sorted together, in the groups' order.
  ev.process(0, "network");
  std::vector<std::string> group_of(static_cast<std::size_t>(topo.host_count()));
  std::vector<int> order(group_of.size(), static_cast<int>(groups.size()));
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (int h : groups[g].hosts) {
      group_of.at(static_cast<std::size_t>(h)) = groups[g].name;
      order.at(static_cast<std::size_t>(h)) = static_cast<int>(g);
    }
  for (int h = 0; h < topo.host_count(); ++h) {
    const auto k = static_cast<std::size_t>(h);
    const std::string& host = topo.hosts()[k].name;
    ev.process(h + 1, group_of[k].empty() ? host : fmt::format("{}: {}", group_of[k], host));
    if (!groups.empty()) ev.sort_index(h + 1, order[k] * (topo.host_count() + 1) + h + 1);
  }
  std::vector<NodeId> node;  // per plan device
  for (const std::string& name : plan.devices) node.push_back(topo.at(name));
  if (detail == TraceDetail::hosts) {
    host_events(ev, plan, topo, r, node, links);
  } else {
    task_events(ev, plan, topo, r, node, detail == TraceDetail::tasks);
    for (const LinkUtilisation& l : links) {
      if (detail == TraceDetail::streams && !between_hosts(topo, l.link)) continue;
      const std::string name = "link " + link_name(topo, l.link);
      for (const auto& [at, fraction] : l.steps) ev.counter(0, name, at, "utilisation", fraction);
    }
  }
  out << "\n]}\n";
  return ev.count();
}

Json chrome_trace(const plan::Plan& plan, const topology::Topology& topo, const plan::Timeline& r,
                  const std::vector<LinkUtilisation>& links, TraceDetail detail) {
  std::ostringstream out;
  write_chrome_trace(out, plan, topo, r, links, detail);
  return Json::parse(out.str());
}

}  // namespace meshsim::traces
