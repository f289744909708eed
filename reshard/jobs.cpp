// The jobs of each resharding strategy, and the chains and NICs a job
// uses (reshard/reshard.h).

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "reshard/reshard.h"

namespace meshsim::reshard {

using topology::NodeId;
using topology::Topology;

namespace {

// Devices grouped by host, hosts in first-seen order.
std::vector<std::vector<NodeId>> by_host(const Topology& t, const std::vector<NodeId>& devices) {
  std::vector<std::vector<NodeId>> out;
  std::map<int, std::size_t> index;
  for (NodeId d : devices) {
    const auto [it, added] = index.try_emplace(t.node(d).host, out.size());
    if (added) out.emplace_back();
    out[it->second].push_back(d);
  }
  return out;
}

Job whole_task(const std::vector<UnitTask>& tasks, std::size_t i, std::vector<NodeId> receivers) {
  return Job{i, tasks[i].slice, tasks[i].bytes, std::move(receivers)};
}

// scatter: unit task i cut along its largest dimension into parts, part k
// chained through the receivers from the (k mod n)-th of each host, the
// hosts in an order turned by k.
void scatter_jobs(const Topology& t, const plan::Tensor& tensor, const std::vector<UnitTask>& tasks,
                  std::size_t i, std::vector<Job>& out) {
  const UnitTask& u = tasks[i];
  const auto hosts = by_host(t, u.receivers);
  std::size_t widest = 0;
  for (const auto& h : hosts) widest = std::max(widest, h.size());
  std::size_t dim = 0;
  for (std::size_t d = 1; d < u.slice.size(); ++d)
    if (u.slice[d].second - u.slice[d].first > u.slice[dim].second - u.slice[dim].first) dim = d;
  const std::int64_t lo = u.slice[dim].first;
  const std::int64_t extent = u.slice[dim].second - lo;
  const auto parts = static_cast<std::int64_t>(
      std::min<std::size_t>(std::max(u.senders.size(), widest), static_cast<std::size_t>(extent)));
  for (std::int64_t k = 0; k < parts; ++k) {
    Box box = u.slice;
    box[dim] = {lo + k * extent / parts, lo + (k + 1) * extent / parts};
    std::vector<NodeId> chain;
    const auto uk = static_cast<std::size_t>(k);
    for (std::size_t h = 0; h < hosts.size(); ++h) {
      const auto& g = hosts[(h + uk) % hosts.size()];
      for (std::size_t r = 0; r < g.size(); ++r) chain.push_back(g[(r + uk) % g.size()]);
    }
    const Bytes bytes = plan::box_bytes(tensor, box);
    out.push_back(Job{i, std::move(box), bytes, std::move(chain), uk});
  }
}

// Alpa's rule for the local all-gather: the destination spec splits the
// tensor over mesh axis 0 into at least as many pieces as the mesh has hosts.
bool alpa_gathers(const Topology& t, const ReshardProblem& p) {
  std::int64_t pieces = 1;
  for (const auto& axes : p.dst_spec.dims)
    if (std::find(axes.begin(), axes.end(), 0) != axes.end())
      for (int a : axes) pieces *= a == 0 ? p.dst.rows : p.dst.cols;
  std::set<int> hosts;
  for (NodeId d : p.dst.devices) hosts.insert(t.node(d).host);
  return pieces >= static_cast<std::int64_t>(hosts.size());
}

// allgather: each destination tile split among its replicas (gcd rule,
// reshard/reshard.h); a receiver's part is sent piece by piece, one job
// per source tile it overlaps, and the replicas holding different parts
// gather the tile.
void allgather_jobs(const Topology& t, const ReshardProblem& p, const std::vector<UnitTask>& tasks,
                    Jobs& out) {
  if (!alpa_gathers(t, p)) {
    for (std::size_t i = 0; i < tasks.size(); ++i)
      for (NodeId r : tasks[i].receivers) out.list.push_back(whole_task(tasks, i, {r}));
    return;
  }
  std::map<NodeId, std::vector<std::size_t>> feeding;  // receiver -> unit tasks it receives
  for (std::size_t i = 0; i < tasks.size(); ++i)
    for (NodeId r : tasks[i].receivers) feeding[r].push_back(i);
  for (const auto& [tile, replicas] : replica_groups(p.tensor.shape, p.dst_spec, p.dst)) {
    std::vector<std::int64_t> cuts(tile.size(), 1);  // per dimension, the parts it is cut into
    auto left = static_cast<std::int64_t>(replicas.size());
    for (std::size_t d = 0; d < tile.size() && left > 1; ++d) {
      cuts[d] = std::gcd(left, tile[d].second - tile[d].first);
      left /= cuts[d];
    }
    const std::size_t first_gather = out.gathers.size();
    out.gathers.resize(first_gather + static_cast<std::size_t>(left));
    for (std::size_t m = 0; m < replicas.size(); ++m) {
      // Member m holds part m / left (mixed radix over the cut dimensions, the first major).
      std::int64_t index = static_cast<std::int64_t>(m) / left;
      Box part = tile;
      for (std::size_t d = tile.size(); d-- > 0;) {
        const std::int64_t len = (tile[d].second - tile[d].first) / cuts[d];
        const std::int64_t at = index % cuts[d];
        index /= cuts[d];
        part[d] = {tile[d].first + at * len, tile[d].first + (at + 1) * len};
      }
      const std::size_t g = first_gather + m % static_cast<std::size_t>(left);
      for (std::size_t i : feeding[replicas[m]]) {
        Box piece = intersect(part, tasks[i].slice);
        if (piece.empty()) continue;
        const Bytes bytes = plan::box_bytes(p.tensor, piece);
        out.list.push_back(Job{i, std::move(piece), bytes, {replicas[m]}, 0, g});
      }
      Gather& gather = out.gathers[g];
      gather.members.push_back(replicas[m]);
      gather.parts.push_back(std::move(part));
      gather.tile = tile;
      gather.bytes = plan::box_bytes(p.tensor, tile);
    }
  }
  // A replica that holds the whole tile gathers nothing.
  for (std::size_t g = 0; g < out.gathers.size(); ++g)
    if (out.gathers[g].members.size() < 2)
      for (Job& j : out.list)
        if (j.gather == g) j.gather = SIZE_MAX;
}

}  // namespace

Jobs make_jobs(const Topology& t, const ReshardProblem& p, Strategy s, const std::vector<UnitTask>& tasks) {
  Jobs jobs;
  if (s != Strategy::signal)
    for (const UnitTask& u : tasks)
      for (NodeId r : u.local) jobs.local.emplace_back(r, u.slice);
  if (s == Strategy::allgather) {
    allgather_jobs(t, p, tasks, jobs);
    return jobs;
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].receivers.empty()) continue;
    switch (s) {
      case Strategy::send_recv:
        for (NodeId r : tasks[i].receivers) jobs.list.push_back(whole_task(tasks, i, {r}));
        break;
      case Strategy::scatter: scatter_jobs(t, p.tensor, tasks, i, jobs.list); break;
      case Strategy::allgather:
      case Strategy::broadcast:
      case Strategy::signal: {
        std::vector<NodeId> chain;
        for (const auto& g : by_host(t, tasks[i].receivers)) chain.insert(chain.end(), g.begin(), g.end());
        jobs.list.push_back(whole_task(tasks, i, std::move(chain)));
        break;
      }
    }
  }
  return jobs;
}

std::vector<NodeId> job_chain(const Topology& t, const Job& j, NodeId sender) {
  std::vector<NodeId> chain{sender};
  const int home = t.node(sender).host;
  for (NodeId r : j.receivers)
    if (t.node(r).host == home) chain.push_back(r);
  for (NodeId r : j.receivers)
    if (t.node(r).host != home) chain.push_back(r);
  return chain;
}

std::vector<std::int64_t> job_nics(const Topology& t, const Job& j, NodeId sender) {
  const auto nic = [&](NodeId d) -> std::int64_t {
    const auto n = t.nic_of(d);
    return n ? static_cast<std::int64_t>(*n) : -1 - t.node(d).host;
  };
  const auto chain = job_chain(t, j, sender);
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i + 1 < chain.size(); ++i)
    if (t.node(chain[i]).host != t.node(chain[i + 1]).host) {
      out.push_back(nic(chain[i]));
      out.push_back(nic(chain[i + 1]));
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace meshsim::reshard
