#include "topology/nccl_xml.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"
#include "hardware/gpus.h"
#include "topology/link_params.h"
#include "topology/nccl_xml_detail.h"

namespace meshsim::topology {

namespace {

// The CPU socket link by CPU family: the presets' 20 GB/s (one UPI link)
// for Intel and whatever we know no better about; AMD's xGMI x16 link at
// 16 GT/s ≈ 32 GB/s; POWER9's X-bus, which NCCL models at 32 GB/s. (NCCL's
// own effective figures: Intel 6–40 GB/s by generation, AMD 16, POWER9 32,
// ARM 6.)
Bandwidth smp_rate_for(const CpuEntry& c) {
  if (c.arch == "ppc64") return Bandwidth::GBps(32);
  if (c.arch == "x86_64" && (c.vendor == "AuthenticAMD" || c.vendor == "AMD")) return Bandwidth::GBps(32);
  return kSmpBandwidth;
}

std::string plural(std::size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string nic_speeds(const std::vector<NicEntry>& nics) {
  std::map<std::int64_t, int> by_speed;  // Mb/s; 0 = unknown
  for (const NicEntry& n : nics) ++by_speed[std::max<std::int64_t>(n.speed_mbps.value_or(0), 0)];
  std::string out;
  for (auto it = by_speed.rbegin(); it != by_speed.rend(); ++it) {
    const std::string rate = it->first == 0
                                 ? std::string("unknown speed")
                                 : fmt::format("{:g} Gb/s", static_cast<double>(it->first) / 1000.0);
    out += fmt::format("{}{} x {}", out.empty() ? "" : ", ", it->second, rate);
  }
  return out;
}

// An import in progress: the dump, the topology being built, and what the
// steps below hand on to each other.
struct Import {
  Import(NcclDump& dump, const std::string& f, const NcclImportOptions& o) : r(dump), file(f), opts(o) {}
  NcclDump& r;
  const std::string& file;
  const NcclImportOptions& opts;
  Topology t;
  int host = 0;
  std::map<std::string, std::size_t> by_busid;  // GPU bus id -> index into r.gpus
  std::vector<std::size_t> order;               // GPUs in numbering order
  bool by_dev = false;                          // numbered by dev (else by bus id)
  std::optional<NodeId> nvswitch;
  std::vector<std::size_t> nic_order;
  std::vector<NodeId> nic_node;

  NodeId add(NodeKind kind, const std::string& local, std::string model = {}) {
    return t.add_node(Node{fmt::format("{}/{}", opts.host, local), kind, host, std::move(model)});
  }
};

void add_gpus(Import& m) {
  // GPUs: by dev, or by bus id when devs repeat.
  for (std::size_t i = 0; i < m.r.gpus.size(); ++i) {
    const auto [it, fresh] = m.by_busid.emplace(m.r.gpus[i].busid, i);
    if (!fresh)
      throw ConfigError(m.file, m.r.gpus[i].path,
                        fmt::format("busid {} of this GPU's pci element is also that of {}",
                                    m.r.gpus[i].busid, m.r.gpus[it->second].path));
  }
  m.order.resize(m.r.gpus.size());
  for (std::size_t i = 0; i < m.order.size(); ++i) m.order[i] = i;
  std::set<int> devs;
  for (const GpuEntry& g : m.r.gpus) devs.insert(g.dev);
  m.by_dev = devs.size() == m.r.gpus.size();
  std::stable_sort(m.order.begin(), m.order.end(), [&](std::size_t a, std::size_t b) {
    return m.by_dev ? m.r.gpus[a].dev < m.r.gpus[b].dev : m.r.gpus[a].busid < m.r.gpus[b].busid;
  });
  for (std::size_t k = 0; k < m.order.size(); ++k) {
    GpuEntry& g = m.r.gpus[m.order[k]];
    const std::string model = !m.opts.gpu_model.empty() ? m.opts.gpu_model : gpu_model_for_sm(g.sm);
    g.node = m.add(NodeKind::gpu, fmt::format("gpu{}", m.by_dev ? g.dev : static_cast<int>(k)), model);
  }
  const bool any_nvswitch = std::any_of(m.r.gpus.begin(), m.r.gpus.end(), [](const GpuEntry& g) {
    return std::any_of(g.nvlinks.begin(), g.nvlinks.end(),
                       [](const NvlinkRef& l) { return l.kind == PeerKind::nvswitch; });
  });
  m.nvswitch = any_nvswitch ? std::optional<NodeId>(m.add(NodeKind::nvswitch, "nvswitch")) : std::nullopt;
}

void add_cpus_and_bridges(Import& m) {
  // CPUs, then the PCIe bridges that lead to a GPU or NIC.
  for (std::size_t i = 0; i < m.r.cpus.size(); ++i)
    m.r.places[static_cast<std::size_t>(m.r.cpus[i].place)].node =
        m.add(NodeKind::cpu, fmt::format("cpu{}", i));
  auto mark_used = [&](int place) {
    for (int p = place; p >= 0 && !m.r.places[static_cast<std::size_t>(p)].used;
         p = m.r.places[static_cast<std::size_t>(p)].parent)
      m.r.places[static_cast<std::size_t>(p)].used = true;
  };
  for (const GpuEntry& g : m.r.gpus) mark_used(g.place);
  for (const NicEntry& n : m.r.nics) mark_used(n.place);
  int switches = 0;
  for (Place& p : m.r.places)
    if (p.parent >= 0 && p.used) p.node = m.add(NodeKind::pcie_switch, fmt::format("pcie{}", switches++));
}

void add_nics(Import& m) {
  // NICs: by net dev when every net has a distinct one, else as listed.
  m.nic_order.resize(m.r.nics.size());
  for (std::size_t i = 0; i < m.nic_order.size(); ++i) m.nic_order[i] = i;
  std::set<std::int64_t> nic_devs;
  for (const NicEntry& n : m.r.nics)
    if (n.dev) nic_devs.insert(*n.dev);
  const bool nic_by_dev = nic_devs.size() == m.r.nics.size();
  if (nic_by_dev)
    std::sort(m.nic_order.begin(), m.nic_order.end(),
              [&](std::size_t a, std::size_t b) { return *m.r.nics[a].dev < *m.r.nics[b].dev; });
  m.nic_node.resize(m.r.nics.size());
  for (std::size_t k = 0; k < m.nic_order.size(); ++k) {
    const NicEntry& n = m.r.nics[m.nic_order[k]];
    m.nic_node[m.nic_order[k]] =
        m.add(NodeKind::nic, fmt::format("nic{}", nic_by_dev ? *n.dev : static_cast<std::int64_t>(k)));
  }
}

void add_gpu_pairs(Import& m) {
  // NVLink. GPU pairs: each GPU lists the pair; lanes per target are summed
  // first (a hand-written file may split them), then both sides must agree.
  std::vector<std::map<std::size_t, std::pair<int, std::string>>> peer_lanes(m.r.gpus.size());
  for (std::size_t i = 0; i < m.r.gpus.size(); ++i)
    for (const NvlinkRef& l : m.r.gpus[i].nvlinks) {
      if (l.kind != PeerKind::gpu) continue;
      const auto it = m.by_busid.find(l.target);
      if (it == m.by_busid.end()) continue;  // a GPU outside the communicator: not in the dump
      if (it->second == i) throw ConfigError(m.file, l.path, "an NVLink from a GPU to itself");
      auto& [lanes, path] = peer_lanes[i][it->second];
      lanes = std::min(lanes + l.count, kMaxLanes + 1);  // saturate: over the limit is an error below
      path = l.path;
    }
  std::vector<std::size_t> position(m.order.size());
  for (std::size_t k = 0; k < m.order.size(); ++k) position[m.order[k]] = k;
  std::set<std::pair<std::size_t, std::size_t>> pairs;  // positions, lower first
  for (std::size_t i = 0; i < peer_lanes.size(); ++i)
    for (const auto& [j, lanes] : peer_lanes[i]) pairs.insert(std::minmax(position[i], position[j]));
  for (const auto& [k, l] : pairs) {
    const std::size_t a = m.order[k];
    const std::size_t b = m.order[l];
    const auto ab = peer_lanes[a].find(b);
    const auto ba = peer_lanes[b].find(a);
    const bool from_a = ab != peer_lanes[a].end();
    const bool from_b = ba != peer_lanes[b].end();
    if (from_a && from_b && ab->second.first != ba->second.first)
      throw ConfigError(
          m.file, ba->second.second,
          fmt::format("{} lists {} NVLink lanes to {}, which lists {} back", m.t.node(m.r.gpus[b].node).name,
                      ba->second.first, m.t.node(m.r.gpus[a].node).name, ab->second.first));
    const auto& [lanes, path] = from_a ? ab->second : ba->second;
    if (lanes > kMaxLanes) throw ConfigError(m.file, path, "more NVLink lanes than meshsim models");
    m.t.add_link(nvlink_link(m.r.gpus[a].node, m.r.gpus[b].node, lanes,
                             hardware::nvlink_generation(std::min(m.r.gpus[a].sm, m.r.gpus[b].sm))));
  }
}

void add_other_nvlinks(Import& m) {
  for (const std::size_t i : m.order) {
    const GpuEntry& g = m.r.gpus[i];
    int to_switch = 0;
    int to_cpu = 0;
    for (const NvlinkRef& l : g.nvlinks) {
      if (l.kind == PeerKind::nvswitch) to_switch = std::min(to_switch + l.count, kMaxLanes + 1);
      if (l.kind == PeerKind::cpu) to_cpu = std::min(to_cpu + l.count, kMaxLanes + 1);
    }
    if (to_switch > kMaxLanes || to_cpu > kMaxLanes)
      throw ConfigError(m.file, g.path, "more NVLink lanes than meshsim models");
    const hardware::NvlinkGeneration& gen = hardware::nvlink_generation(g.sm);
    const int cpu_index = m.r.places[static_cast<std::size_t>(g.place)].cpu;
    const NodeId cpu =
        m.r.places[static_cast<std::size_t>(m.r.cpus[static_cast<std::size_t>(cpu_index)].place)].node;
    if (to_switch > 0) m.t.add_link(nvlink_link(g.node, *m.nvswitch, to_switch, gen));
    if (to_cpu > 0) m.t.add_link(nvlink_link(g.node, cpu, to_cpu, gen));
    for (const C2cRef& c : g.c2c)
      m.t.add_link(Link{LinkKind::nvlink, g.node, cpu, c.lane, c.count, kNvlinkLatency, 1.0, 0, 0});
  }
}

void add_smp_and_pcie(Import& m) {
  for (std::size_t i = 0; i < m.r.cpus.size(); ++i)
    for (std::size_t j = i + 1; j < m.r.cpus.size(); ++j)
      m.t.add_link(smp_link(m.r.places[static_cast<std::size_t>(m.r.cpus[i].place)].node,
                            m.r.places[static_cast<std::size_t>(m.r.cpus[j].place)].node,
                            std::min(smp_rate_for(m.r.cpus[i]), smp_rate_for(m.r.cpus[j]))));

  auto place_node = [&](int p) { return m.r.places[static_cast<std::size_t>(p)].node; };
  for (const Place& p : m.r.places)
    if (p.parent >= 0 && p.used)
      m.t.add_link(pcie_link(place_node(p.parent), p.node, p.uplink.gen, p.uplink.width));
  for (const std::size_t i : m.order) {
    const GpuEntry& g = m.r.gpus[i];
    m.t.add_link(pcie_link(place_node(g.place), g.node, g.link.gen, g.link.width));
  }
  for (const std::size_t i : m.nic_order) {
    const NicEntry& n = m.r.nics[i];
    m.t.add_link(pcie_link(place_node(n.place), m.nic_node[i], n.link.gen, n.link.width));
  }
}

std::string description(const Import& m) {
  std::set<int> sms;
  for (const GpuEntry& g : m.r.gpus) sms.insert(g.sm);
  std::string sm_text;
  for (int sm : sms) sm_text += fmt::format("{}sm {}", sm_text.empty() ? "" : ", ", sm);
  return fmt::format(
      "imported from the NCCL topology dump {}: {} ({}), {}, {}{}{}",
      m.file.empty() ? std::string("<input>") : std::filesystem::path(m.file).filename().string(),
      plural(m.r.gpus.size(), "GPU"), sm_text, plural(m.r.cpus.size(), "CPU"), plural(m.r.nics.size(), "NIC"),
      m.r.nics.empty() ? "" : fmt::format(" ({})", nic_speeds(m.r.nics)),
      m.by_dev ? "" : "; GPUs numbered in PCI bus id order (their dev attributes repeat)");
}

Topology build(NcclDump& r, const std::string& file, const NcclImportOptions& opts) {
  if (r.gpus.empty())
    throw ConfigError(file, "system",
                      "no <gpu> element: the dump has no GPU (NCCL lists the GPUs of the ranks of "
                      "the communicator that wrote it)");
  Import m(r, file, opts);
  m.t.name = !opts.name.empty() ? opts.name
             : file.empty()     ? std::string("nccl-import")
                                : std::filesystem::path(file).stem().string();
  m.host = m.t.add_host(Host{opts.host, ""});
  add_gpus(m);
  add_cpus_and_bridges(m);
  add_nics(m);
  add_gpu_pairs(m);
  add_other_nvlinks(m);
  add_smp_and_pcie(m);
  m.t.description = description(m);
  return std::move(m.t);
}

}  // namespace

std::string gpu_model_for_sm(int sm) {
  if (const hardware::GpuSpec* g = hardware::gpu_for_sm(sm)) return std::string(g->name);
  return fmt::format("sm{}", sm);
}

Topology import_nccl_xml_text(std::string_view xml, const std::string& file, const NcclImportOptions& opts) {
  if (opts.host.empty() || opts.host.find('/') != std::string::npos)
    throw UsageError(fmt::format("host name \"{}\" must be non-empty and contain no '/'", opts.host));
  NcclDump dump = read_nccl_dump(xml, file);
  return build(dump, file, opts);
}

Topology import_nccl_xml(const std::string& path, const NcclImportOptions& opts) {
  return import_nccl_xml_text(read_input_file(path, "an XML file"), path, opts);
}

}  // namespace meshsim::topology
