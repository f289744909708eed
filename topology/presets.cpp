#include "topology/presets.h"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "hardware/hosts.h"
#include "topology/link_params.h"

namespace meshsim::topology {

namespace {

// Builds nodes of one host; names are "h<host>/<local>".
class HostBuilder {
 public:
  HostBuilder(Topology& t, int host) : t_(t), host_(host) {}

  NodeId node(NodeKind kind, const std::string& local, std::string_view model = {}) {
    return t_.add_node(Node{fmt::format("h{}/{}", host_, local), kind, host_, std::string(model)});
  }
  std::vector<NodeId> gpus(int n, const hardware::GpuSpec& model) {
    std::vector<NodeId> out;
    for (int i = 0; i < n; ++i) out.push_back(node(NodeKind::gpu, fmt::format("gpu{}", i), model.name));
    return out;
  }
  void nvlink(NodeId a, NodeId b, int lanes, const hardware::GpuSpec& model) {
    t_.add_link(nvlink_link(a, b, lanes, hardware::nvlink_generation(model.sm)));
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

// The hybrid cube mesh (the NVLink layout of DGX-1 and p3.16xlarge): NV2 pairs and NV1 pairs.
constexpr std::array<std::pair<int, int>, 8> kCubeNv2{
    {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}}};
constexpr std::array<std::pair<int, int>, 8> kCubeNv1{
    {{0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}}};

// The NV2 and NV1 pairs of the cube mesh among `g` (its first four: a quad).
void cube_mesh(HostBuilder& b, const std::vector<NodeId>& g, const hardware::GpuSpec& model) {
  const auto n = static_cast<int>(g.size());
  for (auto [x, y] : kCubeNv2)
    if (x < n && y < n) b.nvlink(g[static_cast<std::size_t>(x)], g[static_cast<std::size_t>(y)], 2, model);
  for (auto [x, y] : kCubeNv1)
    if (x < n && y < n) b.nvlink(g[static_cast<std::size_t>(x)], g[static_cast<std::size_t>(y)], 1, model);
}

// One quad of the cube mesh, one socket with its PCIe switches (the GPUs
// shared out in order) and the NIC on the CPU (p3.8xlarge).
void cube_mesh_quad_host(HostBuilder& b, const hardware::HostPreset& p) {
  const auto g = b.gpus(p.gpus, *p.gpu);
  cube_mesh(b, g, *p.gpu);
  const NodeId cpu = b.node(NodeKind::cpu, "cpu0");
  const std::size_t per_switch = g.size() / static_cast<std::size_t>(p.pcie_switches);
  for (std::size_t i = 0; i < static_cast<std::size_t>(p.pcie_switches); ++i) {
    const NodeId sw = b.node(NodeKind::pcie_switch, fmt::format("pcie{}", i));
    b.pcie(cpu, sw, p.pcie_gen);
    for (std::size_t k = 0; k < per_switch; ++k) b.pcie(sw, g[per_switch * i + k], p.pcie_gen);
  }
  b.pcie(cpu, b.node(NodeKind::nic, "nic0"), p.pcie_gen);
}

// The full cube mesh, two sockets with their PCIe switches (the GPUs shared
// out in order) and the NIC on socket 0 (p3.16xlarge, DGX-1V).
void cube_mesh_host(Topology& t, int host, HostBuilder& b, const hardware::HostPreset& p) {
  const auto g = b.gpus(p.gpus, *p.gpu);
  cube_mesh(b, g, *p.gpu);
  const auto sw = two_socket_pcie(b, p.pcie_switches, p.pcie_gen);
  const std::size_t per_switch = g.size() / sw.size();
  for (std::size_t i = 0; i < g.size(); ++i) b.pcie(sw[i / per_switch], g[i], p.pcie_gen);
  b.pcie(t.at(fmt::format("h{}/cpu0", host)), b.node(NodeKind::nic, "nic0"), p.pcie_gen);
}

// GPUs each with all their NVLink lanes to the NVSwitch, two sockets and
// their PCIe switches, each holding gpus/switches GPUs and nics/switches NICs.
void nvswitch_host(HostBuilder& b, const hardware::HostPreset& p) {
  const auto g = b.gpus(p.gpus, *p.gpu);
  const NodeId nvs = b.node(NodeKind::nvswitch, "nvswitch");
  for (NodeId gpu : g) b.nvlink(gpu, nvs, p.gpu->nvlink_lanes, *p.gpu);
  const auto sw = two_socket_pcie(b, p.pcie_switches, p.pcie_gen);
  const std::size_t gpus_per_sw = g.size() / sw.size();
  for (std::size_t i = 0; i < g.size(); ++i) b.pcie(sw[i / gpus_per_sw], g[i], p.pcie_gen);
  const std::size_t nics_per_sw = static_cast<std::size_t>(p.nics) / sw.size();
  for (std::size_t k = 0; k < static_cast<std::size_t>(p.nics); ++k)
    b.pcie(sw[k / nics_per_sw], b.node(NodeKind::nic, fmt::format("nic{}", k)), p.pcie_gen);
}

}  // namespace

int add_preset_host(Topology& t, const hardware::HostPreset& p) {
  const int host = t.add_host(Host{fmt::format("h{}", t.host_count()), std::string(p.name)});
  HostBuilder b(t, host);
  switch (p.layout) {
    case hardware::HostLayout::cube_mesh_quad: cube_mesh_quad_host(b, p); break;
    case hardware::HostLayout::cube_mesh: cube_mesh_host(t, host, b, p); break;
    case hardware::HostLayout::nvswitch: nvswitch_host(b, p); break;
  }
  MESHSIM_ASSERT(static_cast<int>(t.host_gpus(host).size()) == p.gpus, "preset GPU count");
  return host;
}

}  // namespace meshsim::topology
