#include "sim/ring_order.h"

#include <map>

#include "core/error.h"

namespace meshsim::sim {

namespace {

// The route's bottleneck; zero where there is no route.
Bandwidth width(const topology::Topology& t, topology::NodeId a, topology::NodeId b) {
  try {
    return t.route(a, b).bottleneck;
  } catch (const UsageError&) {
    return Bandwidth{};
  }
}

}  // namespace

std::vector<topology::NodeId> ring_order(const topology::Topology& t,
                                         const std::vector<topology::NodeId>& group) {
  std::vector<int> host_order;
  std::map<int, std::vector<topology::NodeId>> by_host;
  for (topology::NodeId g : group) {
    const int h = t.node(g).host;
    if (!by_host.contains(h)) host_order.push_back(h);
    by_host[h].push_back(g);
  }
  std::vector<topology::NodeId> out;
  for (int h : host_order) {
    std::vector<topology::NodeId> left = by_host[h];
    topology::NodeId cur = left.front();
    left.erase(left.begin());
    out.push_back(cur);
    while (!left.empty()) {
      std::size_t best = 0;
      Bandwidth widest = width(t, cur, left[0]);
      for (std::size_t k = 1; k < left.size(); ++k)
        if (const Bandwidth w = width(t, cur, left[k]); w > widest) {
          best = k;
          widest = w;
        }
      cur = left[best];
      left.erase(left.begin() + static_cast<std::ptrdiff_t>(best));
      out.push_back(cur);
    }
  }
  return out;
}

}  // namespace meshsim::sim
