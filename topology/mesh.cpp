#include "topology/mesh.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/split.h"

namespace meshsim::topology {

namespace {

[[noreturn]] void bad(std::string_view selector, const std::string& why) {
  throw UsageError(
      fmt::format("bad mesh selector \"{}\": {} (examples: \"all\", \"hosts=0-1\", \"hosts=0-1,gpus=0-3\", "
                  "\"h0/gpu0,h1/gpu0\", \"hosts=0-3,shape=2x16\")",
                  selector, why));
}

int parse_int(std::string_view selector, std::string_view s) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    bad(selector, fmt::format("\"{}\" is not a non-negative integer", s));
  return v;
}

// "3" or "0-5" appended to out; values above `max` are refused before any
// range is expanded (`what` names them in the message).
void parse_range(std::string_view selector, std::string_view item, std::vector<int>& out, int max,
                 const std::string& what) {
  const auto dash = item.find('-');
  const int lo = parse_int(selector, item.substr(0, dash));
  const int hi = dash == std::string_view::npos ? lo : parse_int(selector, item.substr(dash + 1));
  if (hi < lo) bad(selector, fmt::format("range \"{}\" is empty", item));
  if (hi > max) bad(selector, fmt::format(fmt::runtime(what), hi, max + 1));
  for (int v = lo; v <= hi; ++v) out.push_back(v);
}

// A selector's items: hosts=, gpus= and shape= values by key, and the bare
// device names (or "all") before any key.
struct Selector {
  std::map<std::string, std::vector<std::string_view>, std::less<>> keyed;
  std::vector<std::string_view> names;
};

Selector parse_selector(std::string_view selector) {
  if (selector.empty()) bad(selector, "it is empty");
  Selector s;
  std::string current;  // key the next bare item continues
  for (std::string_view item : split_commas(selector)) {
    if (item.empty()) bad(selector, "it has an empty item");
    const auto eq = item.find('=');
    if (eq != std::string_view::npos) {
      current = std::string(item.substr(0, eq));
      if (current != "hosts" && current != "gpus" && current != "shape")
        bad(selector, fmt::format("unknown key \"{}\" (keys: hosts, gpus, shape)", current));
      if (s.keyed.contains(current)) bad(selector, fmt::format("\"{}\" is given twice", current));
      s.keyed[current].push_back(item.substr(eq + 1));
    } else if (!current.empty()) {
      s.keyed[current].push_back(item);
    } else {
      s.names.push_back(item);
    }
  }
  return s;
}

// One row of the named GPUs, in the order given.
DeviceMesh named_mesh(const Topology& t, std::string_view selector,
                      const std::vector<std::string_view>& names) {
  DeviceMesh mesh;
  std::set<NodeId> seen;
  for (std::string_view n : names) {
    const auto id = t.find(n);
    if (!id) bad(selector, fmt::format("no device named \"{}\"", n));
    if (t.node(*id).kind != NodeKind::gpu) bad(selector, fmt::format("\"{}\" is not a GPU", n));
    if (!seen.insert(*id).second) bad(selector, fmt::format("\"{}\" appears twice", n));
    mesh.devices.push_back(*id);
  }
  mesh.rows = 1;
  mesh.cols = static_cast<int>(mesh.devices.size());
  return mesh;
}

// The GPUs `gpus` lists of host h (all of them when it lists none).
std::vector<NodeId> host_row(const Topology& t, std::string_view selector, int h,
                             const std::vector<int>& gpus) {
  const auto& hg = t.host_gpus(h);
  if (gpus.empty()) return hg;
  std::vector<NodeId> row;
  std::set<int> seen;
  for (int g : gpus) {
    if (g >= static_cast<int>(hg.size()))
      bad(selector, fmt::format("host {} has no GPU {} (it has {})", h, g, hg.size()));
    if (!seen.insert(g).second) bad(selector, fmt::format("GPU {} is listed twice", g));
    row.push_back(hg[static_cast<std::size_t>(g)]);
  }
  return row;
}

// A row per selected host (every host when `all`), of its selected GPUs.
DeviceMesh host_mesh(const Topology& t, std::string_view selector, Selector& s, bool all) {
  std::vector<int> hosts;
  if (all || !s.keyed.contains("hosts")) {
    for (int h = 0; h < t.host_count(); ++h) hosts.push_back(h);
  } else {
    for (auto item : s.keyed["hosts"])
      parse_range(selector, item, hosts, t.host_count() - 1,
                  "host {} does not exist (the topology has {} hosts)");
  }
  std::vector<int> gpus;
  int max_gpus = 0;
  for (int h = 0; h < t.host_count(); ++h)
    max_gpus = std::max(max_gpus, static_cast<int>(t.host_gpus(h).size()));
  for (auto item : s.keyed["gpus"])
    parse_range(selector, item, gpus, max_gpus - 1, "no host has a GPU {} (the most a host has is {})");
  DeviceMesh mesh;
  std::set<int> seen_hosts;
  int cols = -1;
  for (int h : hosts) {
    if (h >= t.host_count())
      bad(selector, fmt::format("host {} does not exist (the topology has {} hosts)", h, t.host_count()));
    if (!seen_hosts.insert(h).second) bad(selector, fmt::format("host {} is listed twice", h));
    const std::vector<NodeId> row = host_row(t, selector, h, gpus);
    if (row.empty()) continue;  // a host without GPUs adds no row
    if (cols >= 0 && static_cast<int>(row.size()) != cols)
      bad(selector, "the selected hosts have different GPU counts; give gpus=...");
    cols = static_cast<int>(row.size());
    mesh.devices.insert(mesh.devices.end(), row.begin(), row.end());
    ++mesh.rows;
  }
  mesh.cols = cols < 0 ? 0 : cols;
  return mesh;
}

// shape=RxC: the same GPUs as R rows of C.
void reshape(DeviceMesh& mesh, std::string_view selector, const std::vector<std::string_view>& shape) {
  if (shape.size() != 1) bad(selector, "shape takes one value, e.g. shape=2x4");
  const std::string_view s = shape[0];
  const auto x = s.find('x');
  if (x == std::string_view::npos) bad(selector, fmt::format("shape \"{}\" is not ROWSxCOLS", s));
  const int r = parse_int(selector, s.substr(0, x));
  const int c = parse_int(selector, s.substr(x + 1));
  if (r < 1 || c < 1 || static_cast<std::size_t>(r) * static_cast<std::size_t>(c) != mesh.devices.size())
    bad(selector, fmt::format("shape {}x{} does not hold the {} selected GPUs", r, c, mesh.devices.size()));
  mesh.rows = r;
  mesh.cols = c;
}

}  // namespace

DeviceMesh select_mesh(const Topology& t, std::string_view selector) {
  Selector s = parse_selector(selector);
  const bool all = s.names.size() == 1 && s.names[0] == "all";
  if (all) s.names.clear();
  if (all && s.keyed.contains("hosts"))
    bad(selector, "\"all\" already takes every host; give \"all\" or hosts=..., not both");
  if (!s.names.empty() && (s.keyed.contains("hosts") || s.keyed.contains("gpus")))
    bad(selector, "device names cannot be mixed with hosts=/gpus=");
  if (s.names.empty() && !all && !s.keyed.contains("hosts"))
    bad(selector, "give \"all\", hosts=..., or device names");
  DeviceMesh mesh = s.names.empty() ? host_mesh(t, selector, s, all) : named_mesh(t, selector, s.names);
  if (mesh.devices.empty()) bad(selector, "it selects no GPU");
  if (auto it = s.keyed.find("shape"); it != s.keyed.end()) reshape(mesh, selector, it->second);
  return mesh;
}

}  // namespace meshsim::topology
