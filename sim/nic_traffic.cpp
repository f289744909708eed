#include "sim/nic_traffic.h"

namespace meshsim::sim {

NicTraffic nic_traffic(const topology::Topology& t, const SimResult& r) {
  NicTraffic out;
  for (topology::DirLinkId l = 0; l < r.link_bytes.size(); ++l) {
    const auto& link = t.link(topology::Topology::link_of(l));
    const topology::NodeId from = t.from(l);
    if (link.kind != topology::LinkKind::network || t.node(from).kind != topology::NodeKind::nic) continue;
    out.network_bytes += r.link_bytes[l];
    if (r.link_bytes[l] > out.busiest_nic_bytes) {
      out.busiest_nic_bytes = r.link_bytes[l];
      out.busiest_nic = t.node(from).name;
    }
  }
  return out;
}

}  // namespace meshsim::sim
