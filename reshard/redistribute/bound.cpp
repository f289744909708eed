// The redistribution lower bound (reshard/redistribute/program.h).

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "reshard/redistribute/program.h"
#include "reshard/reshard.h"

namespace meshsim::reshard::redistribute {

using topology::NodeId;
using topology::Topology;

namespace {

bool inside(const Box& cell, const Box& tile) {
  for (std::size_t d = 0; d < cell.size(); ++d)
    if (cell[d].first < tile[d].first || cell[d].second > tile[d].second) return false;
  return true;
}

// The cells of the common refinement of two types' grids.
std::vector<Box> cells(const Problem& p) {
  std::vector<std::vector<std::int64_t>> cuts;
  const auto src = shard_counts(p.src, p.axes);
  const auto dst = shard_counts(p.dst, p.dst_axes);
  for (std::size_t d = 0; d < p.tensor.shape.size(); ++d) {
    std::set<std::int64_t> at{0, p.tensor.shape[d]};
    for (std::int64_t k = 1; k < src[d]; ++k) at.insert(k * p.tensor.shape[d] / src[d]);
    for (std::int64_t k = 1; k < dst[d]; ++k) at.insert(k * p.tensor.shape[d] / dst[d]);
    cuts.emplace_back(at.begin(), at.end());
  }
  std::vector<Box> out{Box{}};
  for (const auto& c : cuts) {
    std::vector<Box> grown;
    for (const Box& b : out)
      for (std::size_t k = 0; k + 1 < c.size(); ++k) {
        Box g = b;
        g.emplace_back(c[k], c[k + 1]);
        grown.push_back(std::move(g));
      }
    out = std::move(grown);
  }
  return out;
}

double gpu_capacity(const Topology& t, NodeId gpu) {
  double c = 0;
  for (topology::LinkId l = 0; l < t.link_count(); ++l)
    if (t.link(l).a == gpu || t.link(l).b == gpu) c += t.capacity(l).bytes_per_second_f();
  return c;
}

}  // namespace

RedistBound lower_bound(const Topology& t, const Problem& p) {
  // Every device of either mesh, with its source and destination tiles.
  std::map<NodeId, std::pair<Box, Box>> tiles;  // (source, destination); empty: none
  for (std::size_t i = 0; i < p.mesh.size(); ++i)
    tiles[p.mesh.devices[i]].first = device_tile(p.tensor.shape, p.src, p.axes, i);
  for (std::size_t i = 0; i < p.dst_mesh.size(); ++i)
    tiles[p.dst_mesh.devices[i]].second = device_tile(p.tensor.shape, p.dst, p.dst_axes, i);
  std::map<NodeId, std::int64_t> gpu_in;
  std::map<int, std::int64_t> host_in;
  for (const Box& cell : cells(p)) {
    const std::int64_t b = plan::box_bytes(p.tensor, cell).count();
    std::map<int, std::pair<bool, bool>> on_host;  // host -> (needs it, holds it)
    for (const auto& [d, tile] : tiles) {
      const bool needs = !tile.second.empty() && inside(cell, tile.second);
      const bool holds = !tile.first.empty() && inside(cell, tile.first);
      if (needs && !holds) gpu_in[d] += b;
      auto& h = on_host[t.node(d).host];
      h.first = h.first || needs;
      h.second = h.second || holds;
    }
    for (const auto& [h, nh] : on_host)
      if (nh.first && !nh.second) host_in[h] += b;
  }
  RedistBound lb;
  double worst = 0;
  for (const auto& [d, bytes] : gpu_in) {
    lb.max_gpu_bytes = std::max(lb.max_gpu_bytes, Bytes(bytes));
    const double cap = gpu_capacity(t, d);
    if (cap > 0 && static_cast<double>(bytes) / cap > worst) {
      worst = static_cast<double>(bytes) / cap;
      lb.bounding = fmt::format("{} in", t.node(d).name);
    }
  }
  for (const auto& [h, b] : host_in) {
    lb.max_host_bytes = std::max(lb.max_host_bytes, Bytes(b));
    const double cap = host_fabric_capacity(t, h);
    if (cap > 0 && static_cast<double>(b) / cap > worst) {
      worst = static_cast<double>(b) / cap;
      lb.bounding = fmt::format("{} in", t.hosts()[static_cast<std::size_t>(h)].name);
    }
  }
  if (worst <= 0) return lb;
  Time latency = Time::max();
  for (NodeId a : p.mesh.devices)
    for (NodeId d : p.dst_mesh.devices)
      if (a != d) latency = std::min(latency, t.route(a, d).latency);
  lb.time =
      Time::ps(static_cast<std::int64_t>(worst * 1e12)) + (latency == Time::max() ? Time::zero() : latency);
  return lb;
}

}  // namespace meshsim::reshard::redistribute
