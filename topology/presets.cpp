#include "topology/presets.h"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "topology/link_params.h"

namespace meshsim::topology {

namespace {

// Compute capabilities that pick the NVLink row of topology/link_params.h.
constexpr int kV100 = 70;
constexpr int kA100 = 80;
constexpr int kH100 = 90;

// Builds nodes of one host; names are "h<host>/<local>".
class HostBuilder {
 public:
  HostBuilder(Topology& t, int host) : t_(t), host_(host) {}

  NodeId node(NodeKind kind, const std::string& local, std::string_view model = {}) {
    return t_.add_node(Node{fmt::format("h{}/{}", host_, local), kind, host_, std::string(model)});
  }
  std::vector<NodeId> gpus(int n, std::string_view model) {
    std::vector<NodeId> out;
    for (int i = 0; i < n; ++i) out.push_back(node(NodeKind::gpu, fmt::format("gpu{}", i), model));
    return out;
  }
  void nvlink(NodeId a, NodeId b, int lanes, int sm = kV100) {
    t_.add_link(nvlink_link(a, b, lanes, nvlink_generation(sm)));
  }
  void pcie(NodeId a, NodeId b, int gen, int width = 16) { t_.add_link(pcie_link(a, b, gen, width)); }
  void smp(NodeId a, NodeId b) { t_.add_link(smp_link(a, b)); }

 private:
  Topology& t_;
  int host_;
};

// Two CPU sockets joined by smp, each with `per_cpu` PCIe switches (Gen `gen`).
std::vector<NodeId> two_socket_pcie(HostBuilder& b, int switches, int gen) {
  const NodeId cpu0 = b.node(NodeKind::cpu, "cpu0");
  const NodeId cpu1 = b.node(NodeKind::cpu, "cpu1");
  b.smp(cpu0, cpu1);
  std::vector<NodeId> sw;
  for (int i = 0; i < switches; ++i) {
    sw.push_back(b.node(NodeKind::pcie_switch, fmt::format("pcie{}", i)));
    b.pcie(i < switches / 2 ? cpu0 : cpu1, sw.back(), gen);
  }
  return sw;
}

// V100 hybrid cube-mesh (the DGX-1 / p3.16xlarge NVLink layout): NV2 pairs and NV1 pairs.
constexpr std::array<std::pair<int, int>, 8> kCubeNv2{
    {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}}};
constexpr std::array<std::pair<int, int>, 8> kCubeNv1{
    {{0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}}};

void cube_mesh(HostBuilder& b, const std::vector<NodeId>& g) {
  const auto n = static_cast<int>(g.size());
  for (auto [x, y] : kCubeNv2)
    if (x < n && y < n) b.nvlink(g[static_cast<std::size_t>(x)], g[static_cast<std::size_t>(y)], 2);
  for (auto [x, y] : kCubeNv1)
    if (x < n && y < n) b.nvlink(g[static_cast<std::size_t>(x)], g[static_cast<std::size_t>(y)], 1);
}

// p3.8xlarge: one quad of the cube mesh, one socket, two Gen3 switches, one ENA NIC.
void build_p3_8xlarge(Topology& t, int host) {
  HostBuilder b(t, host);
  const auto g = b.gpus(4, "V100");
  cube_mesh(b, g);
  const NodeId cpu = b.node(NodeKind::cpu, "cpu0");
  for (std::size_t i = 0; i < 2; ++i) {
    const NodeId sw = b.node(NodeKind::pcie_switch, fmt::format("pcie{}", i));
    b.pcie(cpu, sw, 3);
    b.pcie(sw, g[2 * i], 3);
    b.pcie(sw, g[2 * i + 1], 3);
  }
  b.pcie(cpu, b.node(NodeKind::nic, "nic0"), 3);
}

// p3.16xlarge / DGX-1V: full cube mesh, two sockets, four Gen3 switches with
// two GPUs each, one ENA NIC on socket 0.
void build_p3_16xlarge(Topology& t, int host) {
  HostBuilder b(t, host);
  const auto g = b.gpus(8, "V100");
  cube_mesh(b, g);
  const auto sw = two_socket_pcie(b, 4, 3);
  for (std::size_t i = 0; i < 8; ++i) b.pcie(sw[i / 2], g[i], 3);
  b.pcie(t.at(fmt::format("h{}/cpu0", host)), b.node(NodeKind::nic, "nic0"), 3);
}

// NVSwitch hosts with 8 GPUs, two sockets and `switches` PCIe switches,
// each holding 8/switches GPUs and nics/switches NICs.
void nvswitch_host(Topology& t, int host, std::string_view model, int lanes, int sm, int gen, int switches,
                   int nics) {
  HostBuilder b(t, host);
  const auto g = b.gpus(8, model);
  const NodeId nvs = b.node(NodeKind::nvswitch, "nvswitch");
  for (NodeId gpu : g) b.nvlink(gpu, nvs, lanes, sm);
  const auto sw = two_socket_pcie(b, switches, gen);
  const std::size_t gpus_per_sw = 8 / static_cast<std::size_t>(switches);
  for (std::size_t i = 0; i < 8; ++i) b.pcie(sw[i / gpus_per_sw], g[i], gen);
  const std::size_t nics_per_sw = static_cast<std::size_t>(nics / switches);
  for (std::size_t k = 0; k < static_cast<std::size_t>(nics); ++k)
    b.pcie(sw[k / nics_per_sw], b.node(NodeKind::nic, fmt::format("nic{}", k)), gen);
}

void build_p4d(Topology& t, int host) {
  nvswitch_host(t, host, "A100", 12, kA100, 4, 4, 4);
}
void build_dgx_a100(Topology& t, int host) {
  nvswitch_host(t, host, "A100", 12, kA100, 4, 4, 8);
}
void build_dgx_a100_80gb(Topology& t, int host) {
  nvswitch_host(t, host, "A100-80GB", 12, kA100, 4, 4, 8);
}
void build_dgx_h100(Topology& t, int host) {
  nvswitch_host(t, host, "H100", 18, kH100, 5, 8, 8);
}
void build_dgx_h200(Topology& t, int host) {
  nvswitch_host(t, host, "H200", 18, kH100, 5, 8, 8);
}

// NIC defaults: AWS ENA is kernel TCP (≈ 50 µs end to end, 25 µs per NIC hop);
// EFA ≈ 15 µs; InfiniBand verbs ≈ 1.8 µs (0.9 µs per NIC hop). Efficiencies:
// HDR 24/25, NDR 47/50 (measured), TCP and EFA 0.9.
constexpr std::array kPresets{
    HostPreset{"p3.8xlarge", "AWS p3.8xlarge: 4 x V100, NVLink 2 (one cube-mesh quad), 10 Gbps", 4, "V100", 1,
               Bandwidth::Gbps(10), Time::us(25), 0.9, build_p3_8xlarge},
    HostPreset{"p3.16xlarge", "AWS p3.16xlarge / DGX-1V: 8 x V100, NVLink 2 hybrid cube-mesh, 25 Gbps", 8,
               "V100", 1, Bandwidth::Gbps(25), Time::us(25), 0.9, build_p3_16xlarge},
    HostPreset{"p4d.24xlarge", "AWS p4d.24xlarge: 8 x A100 40 GB on NVSwitch, 4 x 100 Gbps EFA", 8, "A100", 4,
               Bandwidth::Gbps(100), Time::ns(7500), 0.9, build_p4d},
    HostPreset{"dgx-a100", "NVIDIA DGX A100 320 GB: 8 x A100 40 GB on NVSwitch, 8 x 200 Gb/s HDR InfiniBand",
               8, "A100", 8, Bandwidth::Gbps(200), Time::ns(900), 0.96, build_dgx_a100},
    HostPreset{"dgx-a100-80gb",
               "NVIDIA DGX A100 640 GB: 8 x A100 80 GB on NVSwitch, 8 x 200 Gb/s HDR InfiniBand", 8,
               "A100-80GB", 8, Bandwidth::Gbps(200), Time::ns(900), 0.96, build_dgx_a100_80gb},
    HostPreset{"dgx-h100", "NVIDIA DGX H100: 8 x H100 on NVSwitch (NVLink 4), 8 x 400 Gb/s NDR InfiniBand", 8,
               "H100", 8, Bandwidth::Gbps(400), Time::ns(900), 0.94, build_dgx_h100},
    HostPreset{"dgx-h200", "NVIDIA DGX H200: 8 x H200 on NVSwitch (NVLink 4), 8 x 400 Gb/s NDR InfiniBand", 8,
               "H200", 8, Bandwidth::Gbps(400), Time::ns(900), 0.94, build_dgx_h200},
};

}  // namespace

std::span<const HostPreset> host_presets() {
  return kPresets;
}

const HostPreset* find_host_preset(std::string_view name) {
  for (const HostPreset& p : kPresets)
    if (p.name == name) return &p;
  return nullptr;
}

std::string host_preset_names() {
  std::string out;
  for (const HostPreset& p : kPresets) out += fmt::format("{}{}", out.empty() ? "" : ", ", p.name);
  return out;
}

int add_preset_host(Topology& t, const HostPreset& p) {
  const int host = t.add_host(Host{fmt::format("h{}", t.host_count()), std::string(p.name)});
  p.build(t, host);
  MESHSIM_ASSERT(static_cast<int>(t.host_gpus(host).size()) == p.gpus, "preset GPU count");
  return host;
}

}  // namespace meshsim::topology
