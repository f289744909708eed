#include "sim/collective_flows.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"
#include "hardware/network_parts.h"
#include "sim/kernel/numeric.h"

namespace meshsim::sim {

using plan::Algorithm;
using plan::CollectiveOp;
using plan::Protocol;
using plan::Transport;
using topology::DirLinkId;
using topology::NodeId;
using topology::Topology;

namespace {

// Consecutive GPUs of one host in the group's order.
std::vector<std::vector<NodeId>> host_runs(const Topology& t, const std::vector<NodeId>& group) {
  std::vector<std::vector<NodeId>> runs;
  for (std::size_t k = 0; k < group.size(); ++k) {
    if (k == 0 || t.node(group[k]).host != t.node(group[k - 1]).host) runs.emplace_back();
    runs.back().push_back(group[k]);
  }
  return runs;
}

// The NICs a run's GPUs leave through, in the host's NIC order.
std::vector<NodeId> run_nics(const Topology& t, const std::vector<NodeId>& run) {
  std::set<NodeId> used;
  for (NodeId g : run)
    if (auto n = t.nic_of(g)) used.insert(*n);
  std::vector<NodeId> out;
  for (NodeId n : t.host_nics(t.node(run.front()).host))
    if (used.contains(n)) out.push_back(n);
  return out;
}

// The run rotated to start at channel c's rail GPU: the first GPU beside
// the run's (c mod #NICs)-th NIC; a run without NICs rotates by c/C.
std::vector<NodeId> rail_run(const Topology& t, const std::vector<NodeId>& run, int c, int channels) {
  const auto nics = run_nics(t, run);
  std::size_t start = 0;
  if (nics.size() > 1) {
    const NodeId nic = nics[static_cast<std::size_t>(c) % nics.size()];
    while (start < run.size() && t.nic_of(run[start]) != nic) ++start;
  } else {
    start = static_cast<std::size_t>(c) * run.size() / static_cast<std::size_t>(std::max(channels, 1));
  }
  std::vector<NodeId> out;
  for (std::size_t k = 0; k < run.size(); ++k) out.push_back(run[(start + k) % run.size()]);
  return out;
}

Transport transport_of(const Topology& t, const std::vector<DirLinkId>& path) {
  bool nvlink = false;
  for (DirLinkId d : path) {
    const auto kind = t.link(Topology::link_of(d)).kind;
    if (kind == topology::LinkKind::network) return Transport::net;
    nvlink = nvlink || kind == topology::LinkKind::nvlink;
  }
  return nvlink ? Transport::nvlink : Transport::pcie;
}

Time path_latency(const Topology& t, const std::vector<DirLinkId>& path) {
  Time sum = Time::zero();
  for (DirLinkId d : path) sum += t.link(Topology::link_of(d)).latency;
  return sum;
}

// One step over `path`: NCCL's per-hop latency, or the path's own when larger.
Time step_latency(const Topology& t, const std::vector<DirLinkId>& path, Algorithm a, Protocol p) {
  return std::max(path_latency(t, path), plan::hop_latency(transport_of(t, path), a, p));
}

Bytes scaled_bytes(Bytes size, double factor) {
  return Bytes(static_cast<std::int64_t>(std::ceil(static_cast<double>(size.count()) * factor)));
}

// Parent of host position r in NCCL-style double binary tree `which` (0 or
// 1) over n positions; -1 at the root. Tree 0 is an in-order binary tree
// (a node's parent flips its lowest set bit up one level); tree 1 mirrors
// it (n even) or shifts it by one (n odd), so leaves of one are inner nodes
// of the other.
int tree_parent(int r, int n, int which) {
  auto parent0 = [n](int x) {
    if (x == 0) return -1;
    const int bit = x & -x;
    int up = (x ^ bit) | (bit << 1);
    if (up >= n) up = x ^ bit;
    return up;
  };
  if (which == 0) return parent0(r);
  if (n % 2 == 0) {
    const int p = parent0(n - 1 - r);
    return p < 0 ? -1 : n - 1 - p;
  }
  const int p = parent0((r - 1 + n) % n);
  return p < 0 ? -1 : (p + 1) % n;
}

// The directed links from GPU `g` to NVSwitches, with their lane counts.
std::vector<std::pair<DirLinkId, int>> switch_links(const Topology& t, NodeId g) {
  std::vector<std::pair<DirLinkId, int>> out;
  const auto& graph = t.graph();
  for (auto [e, end] = boost::out_edges(g, graph); e != end; ++e) {
    const DirLinkId dl = boost::get(boost::edge_index, graph, *e);
    const auto& link = t.link(Topology::link_of(dl));
    const auto to = static_cast<NodeId>(boost::target(*e, graph));
    if (link.kind == topology::LinkKind::nvlink && t.node(to).kind == topology::NodeKind::nvswitch)
      out.emplace_back(dl, link.count);
  }
  return out;
}

// `sw` and the other switches whose network neighbours are exactly its
// own, by node id (`sw` alone when it is not a switch).
std::vector<NodeId> equivalent_switches(const Topology& t, NodeId sw) {
  if (t.node(sw).kind != topology::NodeKind::network_switch) return {sw};
  const auto& graph = t.graph();
  auto neighbours = [&](NodeId n) {
    std::vector<NodeId> out;
    for (auto [e, end] = boost::out_edges(n, graph); e != end; ++e)
      out.push_back(static_cast<NodeId>(boost::target(*e, graph)));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  const auto mine = neighbours(sw);
  std::vector<NodeId> out;
  for (NodeId n = 0; n < t.node_count(); ++n)
    if (t.node(n).kind == topology::NodeKind::network_switch && neighbours(n) == mine) out.push_back(n);
  return out;
}

// Flows one direct collective (every ordered pair) may start: 2,048 GPUs
// (docs/limits.md).
constexpr std::int64_t kMaxDirectFlows = std::int64_t{1} << 22;

class Builder {
 public:
  Builder(const Topology& t, const std::vector<NodeId>& group, CollectiveOp op, Bytes size,
          const CollectiveChoice& ch, Router& router)
      : t_(t),
        group_(group),
        runs_(host_runs(t, group)),
        op_(op),
        size_(size),
        ch_(ch),
        router_(router),
        wire_(plan::traits(ch.protocol).wire_factor) {}

  CollectiveTraffic build() {
    out_.latency = plan::base_latency(ch_.algorithm, ch_.protocol);
    if (group_.size() < 2) return std::move(out_);
    switch (ch_.algorithm) {
      case Algorithm::ring: ring(); break;
      case Algorithm::tree: tree(); break;
      case Algorithm::nvls: runs_.size() > 1 ? nvls_sharp() : nvls(); break;
      case Algorithm::nvls_tree: nvls_tree(); break;
      case Algorithm::direct: direct(); break;
      case Algorithm::collnet_direct: collnet_direct(); break;
      case Algorithm::collnet_chain: collnet_chain(); break;
    }
    return std::move(out_);
  }

 private:
  std::vector<DirLinkId> add(NodeId a, NodeId b, Bytes bytes) {
    auto p = router_.path(a, b);
    out_.flows.push_back({a, b, p, bytes, pipeline_});
    return p;
  }

  void ring() {
    const auto n = static_cast<std::int64_t>(group_.size());
    const auto steps = plan::ring_steps(op_, n);
    const Bytes edge =
        scaled_bytes(size_, wire_ * static_cast<double>(steps) / static_cast<double>(n * ch_.channels));
    Time lat_sum = Time::zero();
    for (int c = 0; c < ch_.channels; ++c) {
      pipeline_ = c;
      std::vector<NodeId> order;
      std::vector<std::size_t> run_start;  // per position: where its run starts
      for (const auto& run : runs_) {
        const std::size_t s = order.size();
        for (NodeId g : rail_run(t_, run, c, ch_.channels)) {
          order.push_back(g);
          run_start.push_back(s);
        }
      }
      for (std::size_t k = 0; k < order.size(); ++k) {
        const std::size_t next = (k + 1) % order.size();
        const NodeId a = order[k];
        const NodeId rail = order[run_start[k]];
        std::vector<DirLinkId> path;
        if (run_start[next] != run_start[k] && a != rail && t_.nic_of(a) != t_.nic_of(rail)) {
          // PXN: over NVLink to the GPU beside this channel's NIC, then out.
          path = t_.route(a, rail).links();
          const auto rest = router_.path(rail, order[next]);
          path.insert(path.end(), rest.begin(), rest.end());
          out_.flows.push_back({a, order[next], path, edge, pipeline_});
        } else {
          path = add(a, order[next], edge);
        }
        if (c == 0) lat_sum += step_latency(t_, path, ch_.algorithm, ch_.protocol);
      }
    }
    // A chunk walks `steps` consecutive edges of the ring.
    out_.latency += lat_sum * steps / n;
  }

  // A chain through `r` (its head first): `bytes` up every edge toward the
  // head and back down; returns the latency of its steps, one way.
  Time chain_flows(const std::vector<NodeId>& r, Bytes bytes) {
    Time sum = Time::zero();
    for (std::size_t k = 1; k < r.size(); ++k) {
      sum += step_latency(t_, add(r[k], r[k - 1], bytes), ch_.algorithm, ch_.protocol);
      add(r[k - 1], r[k], bytes);
    }
    return sum;
  }

  // The chains inside hosts and the two trees between their top GPUs;
  // `top(run, c)` names the host's GPU that joins the trees.
  void tree() {
    const auto hosts = static_cast<int>(runs_.size());
    const Bytes chain = scaled_bytes(size_, wire_ / ch_.channels);
    const Bytes half = scaled_bytes(size_, wire_ / (2.0 * ch_.channels));
    Time chain_lat = Time::zero();
    Time net_lat = Time::zero();
    for (int c = 0; c < ch_.channels; ++c) {
      pipeline_ = c;
      std::vector<NodeId> tops;
      for (const auto& run : runs_) {
        const auto r = rail_run(t_, run, c, ch_.channels);
        tops.push_back(r.front());
        const Time sum = chain_flows(r, chain);
        if (c == 0) chain_lat = std::max(chain_lat, sum);
      }
      for (int which = 0; which < (hosts > 1 ? 2 : 0); ++which)
        for (int r = 0; r < hosts; ++r) {
          const int p = tree_parent(r, hosts, which);
          if (p < 0) continue;
          const auto up = add(tops[static_cast<std::size_t>(r)], tops[static_cast<std::size_t>(p)], half);
          add(tops[static_cast<std::size_t>(p)], tops[static_cast<std::size_t>(r)], half);
          if (c == 0) net_lat = std::max(net_lat, step_latency(t_, up, ch_.algorithm, ch_.protocol));
        }
    }
    out_.latency += 2 * (chain_lat + net_lat * plan::tree_depth(hosts));
    out_.pipeline_limit = plan::tree_channel_limit(t_.node(group_.front()).model, hosts);
  }

  // Every GPU up to its NVSwitches and back down; n: GPUs per host.
  void nvls() {
    const double n = static_cast<double>(runs_.front().size());
    double up = 1.0 + 1.0 / n;
    double down = up;
    if (op_ == CollectiveOp::reduce_scatter) down = 1.0 / n, up = 1.0;
    if (op_ == CollectiveOp::all_gather) up = 1.0 / n, down = 1.0;
    Time lat = Time::zero();
    for (NodeId g : group_) {
      const auto links = switch_links(t_, g);
      int lanes = 0;
      for (const auto& [dl, l] : links) lanes += l;
      const double eff = plan::nvls_efficiency(t_.node(g).model);
      for (const auto& [dl, l] : links) {
        const double share = wire_ * static_cast<double>(l) / lanes / eff;
        out_.flows.push_back({g, g, {dl}, scaled_bytes(size_, up * share), 0});
        out_.flows.push_back({g, g, {dl ^ 1U}, scaled_bytes(size_, down * share), 0});
        lat = std::max(lat, step_latency(t_, {dl}, ch_.algorithm, ch_.protocol));
      }
    }
    out_.latency += lat;
  }

  // Aggregation tree `tree` (a channel, or a local GPU index): each of
  // `heads` (one per host) sends `bytes` through its NIC up to the tree's
  // root and gets the total back down the same links. The root is the
  // switch midway between the first and the last head's NICs (a spine, or
  // the one leaf they share), or, as the aggregation manager spreads trees,
  // the tree-th (mod their count) of the switches joined to exactly the
  // same neighbours (every spine of a two-level tree). Each directed link
  // of the tree carries `bytes` once, whatever the host count: the
  // switches reduce what they receive. Returns the tree's round-trip latency.
  Time sharp_tree(const std::vector<NodeId>& heads, Bytes bytes, int tree) {
    const auto nic_first = t_.nic_of(heads.front());
    const auto nic_last = t_.nic_of(heads.back());
    if (!nic_first || !nic_last) throw UsageError("in-network reduction needs a NIC beside every head GPU");
    const topology::Route& across = t_.route(*nic_first, *nic_last);
    std::vector<NodeId> nodes{across.src};
    for (const topology::Hop& h : across.hops) nodes.push_back(h.to);
    const auto peers = equivalent_switches(t_, nodes[nodes.size() / 2]);
    const NodeId root = peers[static_cast<std::size_t>(tree) % peers.size()];
    std::set<DirLinkId> up;
    Time lat = Time::zero();
    for (NodeId head : heads) {
      std::vector<DirLinkId> path = t_.route(head, *t_.nic_of(head)).links();
      const auto rest = t_.route(*t_.nic_of(head), root).links();
      path.insert(path.end(), rest.begin(), rest.end());
      up.insert(path.begin(), path.end());
      lat = std::max(lat, path_latency(t_, path));
    }
    for (DirLinkId d : up) {
      out_.flows.push_back({root, root, {d}, bytes, pipeline_});
      out_.flows.push_back({root, root, {d ^ 1U}, bytes, pipeline_});
    }
    return 2 * lat;
  }

  // NCCL's network step of an in-network reduction, or the tree's own
  // latency when larger.
  Time sharp_step(Time tree_latency) const {
    return std::max(tree_latency, plan::hop_latency(Transport::net, ch_.algorithm, ch_.protocol));
  }

  void collnet_direct() {
    const Bytes share = scaled_bytes(size_, wire_ / ch_.channels);
    Time intra = Time::zero();
    Time net = Time::zero();
    for (int c = 0; c < ch_.channels; ++c) {
      pipeline_ = c;
      std::vector<NodeId> heads;
      for (const auto& run : runs_) {
        const NodeId head = rail_run(t_, run, c, ch_.channels).front();
        heads.push_back(head);
        for (NodeId g : run) {
          if (g == head) continue;
          intra = std::max(intra, step_latency(t_, add(g, head, share), ch_.algorithm, ch_.protocol));
          add(head, g, share);
        }
      }
      net = std::max(net, sharp_tree(heads, share, c));
    }
    const auto others = static_cast<std::int64_t>(runs_.front().size()) - 1;
    out_.latency += 2 * (intra + plan::kCollNetPeerLatency * others) + sharp_step(net);
  }

  void collnet_chain() {
    const Bytes share = scaled_bytes(size_, wire_ / ch_.channels);
    Time chain = Time::zero();
    Time net = Time::zero();
    for (int c = 0; c < ch_.channels; ++c) {
      pipeline_ = c;
      std::vector<NodeId> heads;
      for (const auto& run : runs_) {
        const auto r = rail_run(t_, run, c, ch_.channels);
        heads.push_back(r.front());
        chain = std::max(chain, chain_flows(r, share));
      }
      net = std::max(net, sharp_tree(heads, share, c));
    }
    out_.latency += 2 * chain + sharp_step(net);
  }

  // NVLS inside every host, and across hosts GPU k of each reduces its
  // 1/g share through the switches (NCCL's multi-node NVLS).
  void nvls_sharp() {
    nvls();
    const std::size_t g = runs_.front().size();
    const Bytes share = scaled_bytes(size_, wire_ / static_cast<double>(g));
    Time net = Time::zero();
    for (std::size_t k = 0; k < g; ++k) {
      std::vector<NodeId> heads;
      for (const auto& run : runs_) heads.push_back(run[k]);
      net = std::max(net, sharp_tree(heads, share, static_cast<int>(k)));
    }
    out_.latency += sharp_step(net);
  }

  void nvls_tree() {
    nvls();  // per host: (g+1)/g of the data each way per GPU
    const auto hosts = static_cast<int>(runs_.size());
    const std::size_t g = runs_.front().size();
    const Bytes half = scaled_bytes(size_, wire_ / (2.0 * static_cast<double>(g)));
    Time net_lat = Time::zero();
    for (std::size_t k = 0; k < g; ++k)
      for (int which = 0; which < 2; ++which)
        for (int r = 0; r < hosts; ++r) {
          const int p = tree_parent(r, hosts, which);
          if (p < 0) continue;
          const NodeId a = runs_[static_cast<std::size_t>(r)][k];
          const NodeId b = runs_[static_cast<std::size_t>(p)][k];
          net_lat = std::max(net_lat, step_latency(t_, add(a, b, half), ch_.algorithm, ch_.protocol));
          add(b, a, half);
        }
    out_.latency += 2 * net_lat * plan::tree_depth(hosts);
  }

  void direct() {
    const auto n = static_cast<std::int64_t>(group_.size());
    if (n * (n - 1) > kMaxDirectFlows)
      throw UsageError(fmt::format(
          "a direct {} over {} GPUs is {} flows (one per ordered pair), more than the {} one collective "
          "may start (each takes about 1.7 KB: 2,048 GPUs take 7 GB)",
          plan::to_string(op_), n, n * (n - 1), kMaxDirectFlows));
    const std::int64_t phases = plan::direct_phases(op_);
    const Bytes pair = scaled_bytes(size_, wire_ * static_cast<double>(phases) / static_cast<double>(n));
    Time lat = Time::zero();
    for (NodeId a : group_)
      for (NodeId b : group_)
        if (a != b) {
          lat = std::max(lat, path_latency(t_, add(a, b, pair)));
          ++pipeline_;  // every pair on its own
        }
    out_.latency += lat * phases;
  }

  const Topology& t_;
  const std::vector<NodeId>& group_;
  std::vector<std::vector<NodeId>> runs_;
  CollectiveOp op_;
  Bytes size_;
  CollectiveChoice ch_;
  Router& router_;
  double wire_;
  int pipeline_ = 0;
  CollectiveTraffic out_;
};

}  // namespace

bool reducing_fabric(const Topology& t) {
  bool any = false;
  for (const topology::Node& n : t.nodes()) {
    if (n.kind != topology::NodeKind::network_switch) continue;
    const auto* sw = hardware::find_switch(n.model);
    if (sw == nullptr || sw->sharp == 0) return false;
    any = true;
  }
  return any;
}

GroupShape group_shape(const Topology& t, const std::vector<NodeId>& group) {
  GroupShape s;
  s.ranks = static_cast<std::int64_t>(group.size());
  std::map<int, std::vector<NodeId>> by_host;
  for (NodeId g : group) by_host[t.node(g).host].push_back(g);
  s.hosts = static_cast<std::int64_t>(by_host.size());
  s.nics = by_host.empty() ? 0 : INT32_MAX;
  s.nvls = !by_host.empty();
  for (const auto& [h, gpus] : by_host) {
    s.max_per_host = std::max<std::int64_t>(s.max_per_host, static_cast<std::int64_t>(gpus.size()));
    s.nics = std::min(s.nics, static_cast<int>(run_nics(t, gpus).size()));
    for (NodeId g : gpus) s.nvls = s.nvls && plan::nvls_capable_model(t.node(g).model);
  }
  // Every GPU must reach an NVSwitch directly.
  for (NodeId g : group) s.nvls = s.nvls && !switch_links(t, g).empty();
  s.sharp = t.sharp && s.hosts >= 2 && reducing_fabric(t);
  return s;
}

int default_channels(const GroupShape& s) {
  return s.hosts > 1 ? std::clamp(s.nics, 1, 64) : 1;
}

std::string unsupported_reason(Algorithm a, CollectiveOp op, const GroupShape& s) {
  if (!plan::supports(a, op)) return fmt::format("{} cannot run {}", plan::to_string(a), plan::to_string(op));
  const auto& tr = plan::traits(a);
  if (tr.needs_nvls && !s.nvls)
    return fmt::format("{} needs every GPU on an NVSwitch with NVLink SHARP ({} or later)",
                       plan::to_string(a), plan::first_nvls_model());
  if (tr.needs_hosts && s.hosts < 2)
    return fmt::format("{} needs a group that spans hosts", plan::to_string(a));
  if ((tr.needs_sharp || (a == Algorithm::nvls && s.hosts > 1)) && !s.sharp)
    return fmt::format(
        "{} {}needs switches that reduce: --sharp (NCCL's CollNet) on a fabric of SHARP switches ({})",
        plan::to_string(a), a == Algorithm::nvls ? "across hosts " : "", hardware::switch_names());
  const bool even = s.ranks == s.hosts * s.max_per_host;
  if ((a == Algorithm::nvls_tree || a == Algorithm::nvls || tr.needs_sharp) && !even)
    return fmt::format("{} needs the same number of GPUs on every host", plan::to_string(a));
  if (a == Algorithm::collnet_direct && s.max_per_host > 8)
    return "collnet_direct serves at most 8 GPUs per host (collnet_chain serves more)";
  return {};
}

CollectiveTraffic collective_traffic(const Topology& t, const std::vector<NodeId>& group, CollectiveOp op,
                                     Bytes size, const CollectiveChoice& choice, Router& router) {
  return Builder(t, group, op, size, choice, router).build();
}

std::vector<LockstepFlow> lockstep_flows(const CollectiveTraffic& traffic) {
  std::map<int, LockstepFlow> by;
  std::map<int, std::unordered_map<DirLinkId, double>> bytes;
  for (std::size_t i = 0; i < traffic.flows.size(); ++i) {
    const auto& f = traffic.flows[i];
    auto& lf = by[f.pipeline];
    lf.members.push_back(i);
    lf.size = std::max(lf.size, f.bytes);
    auto& on = bytes[f.pipeline];
    for (DirLinkId d : f.path) {
      auto [it, fresh] = on.try_emplace(d, 0.0);
      if (fresh) lf.path.push_back(d);
      it->second += static_cast<double>(f.bytes.count());
    }
  }
  std::vector<LockstepFlow> out;
  for (auto& [p, lf] : by) {
    if (traffic.pipeline_limit.bps() > 0) lf.cap = traffic.pipeline_limit;
    const auto& on = bytes[p];
    const double size = std::max(1.0, static_cast<double>(lf.size.count()));
    for (DirLinkId d : lf.path) lf.weights.push_back(std::max(on.at(d), 1.0) / size);
    out.push_back(std::move(lf));
  }
  return out;
}

Time predict(const Topology& t, const CollectiveTraffic& traffic) {
  std::unordered_map<DirLinkId, double> load;
  std::unordered_map<int, Bytes> pipeline_size;  // as lockstep_flows sizes a pipeline: its largest member
  for (const auto& f : traffic.flows) {
    for (DirLinkId d : f.path) load[d] += static_cast<double>(f.bytes.count());
    auto& size = pipeline_size[f.pipeline];
    size = std::max(size, f.bytes);
  }
  double worst = 0;
  for (const auto& [d, bytes] : load)
    worst = std::max(worst, bytes / t.capacity(Topology::link_of(d)).bytes_per_second_f());
  if (traffic.pipeline_limit.bps() > 0)
    for (const auto& [p, size] : pipeline_size)
      worst =
          std::max(worst, static_cast<double>(size.count()) / traffic.pipeline_limit.bytes_per_second_f());
  const double ps =
      std::ceil(worst * kernel::kPsPerSecond);  // rounded up, as sim/kernel/numeric.h's contract says
  // Beyond the clock's range: the largest time, so selection never prefers it (a run of it stops with
  // the clock's message).
  if (!(ps < static_cast<double>(Time::max().count_ps() / 2))) return Time::max();
  return traffic.latency + Time::ps(static_cast<std::int64_t>(ps));
}

CollectiveChoice choose_collective(const Topology& t, const std::vector<NodeId>& group, Bytes size,
                                   const CollectiveRequest& req) {
  const GroupShape shape = group_shape(t, group);
  if (req.algorithm) {
    const std::string why = unsupported_reason(*req.algorithm, req.op, shape);
    if (!why.empty()) throw UsageError(fmt::format("algorithm {}: {}", plan::to_string(*req.algorithm), why));
    if (req.protocol && !plan::supports(*req.algorithm, *req.protocol))
      throw UsageError(fmt::format("algorithm {} runs only the {} protocol", plan::to_string(*req.algorithm),
                                   plan::to_string(plan::Protocol::simple)));
  }
  CollectiveChoice best;
  best.channels = req.channels > 0 ? req.channels : default_channels(shape);
  bool found = false;
  std::string refused;  // why the last candidate that could not be costed was refused
  for (Algorithm a : plan::kAlgorithms) {
    const auto& tr = plan::traits(a);
    if (req.algorithm ? a != *req.algorithm
                      : !unsupported_reason(a, req.op, shape).empty() ||
                            (!tr.tuned && req.op != CollectiveOp::all_to_all) ||
                            (tr.tuned_across_hosts && shape.hosts < 2))
      continue;
    for (Protocol p : plan::kProtocols) {
      if (req.protocol ? p != *req.protocol : !plan::supports(a, p)) continue;
      CollectiveChoice c{a, p, best.channels, Time::zero()};
      if (req.algorithm && req.protocol) return c;  // nothing to choose
      Router router(t, t.routing);
      try {
        c.predicted = predict(t, collective_traffic(t, group, req.op, size, c, router));
      } catch (const UsageError& e) {
        if (req.algorithm) throw;
        refused = e.what();
        continue;  // a path this algorithm needs does not exist here, or a limit
      }
      if (!found || c.predicted < best.predicted) best = c;
      found = true;
    }
  }
  if (!found)
    throw UsageError(fmt::format("no algorithm of the collective table runs {} on this group{}",
                                 plan::to_string(req.op), refused.empty() ? "" : ": " + refused));
  return best;
}

}  // namespace meshsim::sim
