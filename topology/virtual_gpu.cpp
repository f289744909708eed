#include "topology/virtual_gpu.h"

#include <map>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::topology {

VirtualGpu virtual_gpu_topology(const std::vector<std::string>& devices, const std::string& gpu_model,
                                Bandwidth single_copy, Bandwidth aggregate, Time copy_latency) {
  if (devices.empty()) throw UsageError("a virtual GPU needs at least one device");
  if (single_copy.bps() <= 0 || aggregate.bps() <= 0)
    throw UsageError("virtual GPU copy bandwidths must be greater than zero");
  VirtualGpu v;
  Topology& t = v.topology;
  t.name = fmt::format("virtual devices on one {}", gpu_model.empty() ? std::string("GPU") : gpu_model);
  std::map<std::string, int> hosts;
  auto host_of = [&](const std::string& dev) {
    const auto slash = dev.find('/');
    const std::string h = slash == std::string::npos ? std::string("local") : dev.substr(0, slash);
    auto [it, fresh] = hosts.emplace(h, 0);
    if (fresh) it->second = t.add_host(Host{h, "virtual"});
    return it->second;
  };
  std::vector<NodeId> gpus;
  for (const auto& d : devices) gpus.push_back(t.add_node(Node{d, NodeKind::gpu, host_of(d), gpu_model}));
  // Hub and the shared memory link; their names cannot clash with plan devices'
  // (a plan device name has no '#').
  const int h0 = hosts.begin()->second;
  const NodeId hub = t.add_node(Node{"#copy-hub", NodeKind::nvswitch, h0, ""});
  const NodeId mem_a = t.add_node(Node{"#memory-in", NodeKind::nvswitch, h0, ""});
  const NodeId mem_b = t.add_node(Node{"#memory-out", NodeKind::nvswitch, h0, ""});
  const Time half = Time::ps(copy_latency.count_ps() / 2);
  for (NodeId g : gpus) t.add_link(Link{LinkKind::nvlink, g, hub, single_copy, 1, half, 1.0, 0, 0});
  const LinkId mem = t.add_link(Link{LinkKind::nvlink, mem_a, mem_b, aggregate, 1, Time::zero(), 1.0, 0, 0});
  v.memory = Topology::directed(mem, false);
  return v;
}

}  // namespace meshsim::topology
