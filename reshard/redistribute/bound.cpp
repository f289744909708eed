// The redistribution lower bound (reshard/redistribute/program.h).

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/memory_limit.h"
#include "reshard/redistribute/program.h"
#include "reshard/reshard.h"

namespace meshsim::reshard::redistribute {

using topology::NodeId;
using topology::Topology;

namespace {

// What the topology keeps per route it has worked out: measured at 223 B
// (`meshsim redistribute --strategy xla` on 64 and on 128 DGX-H100: 69 MB
// and 245 MB, 786,432 more pairs), rounded up.
constexpr double kBytesPerRoute = 256;

bool inside(const Box& cell, const Box& tile) {
  for (std::size_t d = 0; d < cell.size(); ++d)
    if (cell[d].first < tile[d].first || cell[d].second > tile[d].second) return false;
  return true;
}

// Per dimension, the cuts of the common refinement of two types' grids
// (0 and the dimension's size included).
std::vector<std::vector<std::int64_t>> cell_cuts(const Problem& p) {
  std::vector<std::vector<std::int64_t>> cuts;
  const auto src = shard_counts(p.src, p.axes);
  const auto dst = shard_counts(p.dst, p.dst_axes);
  for (std::size_t d = 0; d < p.tensor.shape.size(); ++d) {
    std::set<std::int64_t> at{0, p.tensor.shape[d]};
    for (std::int64_t k = 1; k < src[d]; ++k) at.insert(k * p.tensor.shape[d] / src[d]);
    for (std::int64_t k = 1; k < dst[d]; ++k) at.insert(k * p.tensor.shape[d] / dst[d]);
    cuts.emplace_back(at.begin(), at.end());
  }
  return cuts;
}

// Calls f(cell) for each cell of the refinement `cuts` inside `tile` (a
// tile of either grid: its bounds are cuts).
template <typename F>
void for_each_cell_in(const std::vector<std::vector<std::int64_t>>& cuts, const Box& tile, F f) {
  std::vector<std::size_t> lo(cuts.size());
  std::vector<std::size_t> hi(cuts.size());
  for (std::size_t d = 0; d < cuts.size(); ++d) {
    lo[d] = static_cast<std::size_t>(std::lower_bound(cuts[d].begin(), cuts[d].end(), tile[d].first) -
                                     cuts[d].begin());
    hi[d] = static_cast<std::size_t>(std::lower_bound(cuts[d].begin(), cuts[d].end(), tile[d].second) -
                                     cuts[d].begin());
    if (lo[d] >= hi[d]) return;
  }
  std::vector<std::size_t> at = lo;
  Box cell(cuts.size());
  while (true) {
    for (std::size_t d = 0; d < cuts.size(); ++d) cell[d] = {cuts[d][at[d]], cuts[d][at[d] + 1]};
    f(cell);
    std::size_t d = cuts.size();
    while (d > 0 && ++at[d - 1] == hi[d - 1]) {
      at[d - 1] = lo[d - 1];
      --d;
    }
    if (d == 0) return;
  }
}

// Each node's link capacity, bytes per second: the sum over its links.
std::vector<double> node_capacity(const Topology& t) {
  std::vector<double> c(t.node_count(), 0.0);
  for (topology::LinkId l = 0; l < t.link_count(); ++l) {
    c[t.link(l).a] += t.capacity(l).bytes_per_second_f();
    c[t.link(l).b] += t.capacity(l).bytes_per_second_f();
  }
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
  // A GPU receives what its destination tile holds beyond its source tile;
  // a host, the cells some GPU of it needs and none of it holds.
  std::map<NodeId, std::int64_t> gpu_in;
  std::map<int, std::vector<NodeId>> host_devices;
  for (const auto& [d, tile] : tiles) {
    host_devices[t.node(d).host].push_back(d);
    if (tile.second.empty()) continue;
    const Box both = tile.first.empty() ? Box{} : intersect(tile.first, tile.second);
    const std::int64_t need = plan::box_bytes(p.tensor, tile.second).count() -
                              (both.empty() ? 0 : plan::box_bytes(p.tensor, both).count());
    if (need > 0) gpu_in[d] = need;
  }
  const auto cuts = cell_cuts(p);
  std::map<int, std::int64_t> host_in;
  for (const auto& host : host_devices) {
    const std::vector<NodeId>& devices = host.second;  // (a lambda below reads it: not a structured binding)
    std::int64_t in = 0;
    bool needed = false;
    for (std::size_t k = 0; k < devices.size(); ++k) {
      const Box& need = tiles[devices[k]].second;
      if (need.empty()) continue;
      for_each_cell_in(cuts, need, [&](const Box& cell) {
        for (std::size_t j = 0; j < k; ++j)  // counted with an earlier GPU of the host
          if (!tiles[devices[j]].second.empty() && inside(cell, tiles[devices[j]].second)) return;
        for (NodeId d : devices)
          if (!tiles[d].first.empty() && inside(cell, tiles[d].first)) return;
        in += plan::box_bytes(p.tensor, cell).count();
        needed = true;
      });
    }
    if (needed) host_in[host.first] = in;
  }
  RedistBound lb;
  double worst = 0;
  const std::vector<double> capacity = node_capacity(t);
  for (const auto& [d, bytes] : gpu_in) {
    lb.max_gpu_bytes = std::max(lb.max_gpu_bytes, Bytes(bytes));
    const double cap = capacity[d];
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
  // The least latency from a source GPU to another destination GPU: a route
  // per pair, each kept by the topology once worked out.
  const double pairs =
      static_cast<double>(p.mesh.devices.size()) * static_cast<double>(p.dst_mesh.devices.size());
  require_memory(pairs * kBytesPerRoute,
                 fmt::format("the lower bound's routes between {} and {} GPUs ({:.0f} pairs)",
                             p.mesh.devices.size(), p.dst_mesh.devices.size(), pairs),
                 "smaller meshes");
  Time latency = Time::max();
  for (NodeId a : p.mesh.devices)
    for (NodeId d : p.dst_mesh.devices)
      if (a != d) latency = std::min(latency, t.route(a, d).latency);
  lb.time =
      Time::ps(static_cast<std::int64_t>(worst * 1e12)) + (latency == Time::max() ? Time::zero() : latency);
  return lb;
}

}  // namespace meshsim::reshard::redistribute
