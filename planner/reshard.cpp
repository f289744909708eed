#include "planner/reshard.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::planner {

using topology::NodeId;
using topology::Topology;

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::send_recv:
      return "send-recv";
    case Strategy::allgather:
      return "allgather";
    case Strategy::broadcast:
      return "broadcast";
    case Strategy::signal:
      return "signal";
  }
  return "?";
}

std::string_view to_string(Balance b) {
  switch (b) {
    case Balance::none:
      return "none";
    case Balance::device:
      return "device";
    case Balance::host_size:
      return "host-size";
  }
  return "?";
}

std::optional<Strategy> strategy_from(std::string_view s) {
  for (Strategy x : {Strategy::send_recv, Strategy::allgather, Strategy::broadcast, Strategy::signal})
    if (to_string(x) == s) return x;
  return std::nullopt;
}

std::optional<Balance> balance_from(std::string_view s) {
  for (Balance x : {Balance::none, Balance::device, Balance::host_size})
    if (to_string(x) == s) return x;
  return std::nullopt;
}

namespace {

// Distinct tiles of a mesh with the devices holding each, in first-seen order.
std::vector<std::pair<Box, std::vector<NodeId>>> replica_groups(const std::vector<std::int64_t>& shape,
                                                                const ShardingSpec& spec,
                                                                const topology::DeviceMesh& m) {
  const std::vector<Box> all = tiles(shape, spec, m.rows, m.cols);
  std::vector<std::pair<Box, std::vector<NodeId>>> groups;
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == all[i]; });
    if (it == groups.end()) {
      groups.push_back({all[i], {}});
      it = groups.end() - 1;
    }
    it->second.push_back(m.devices[i]);
  }
  return groups;
}

std::string buffer_name(const Topology& t, NodeId d, bool src) {
  return fmt::format("{}:{}", src ? "src" : "dst", t.node(d).name);
}

class Builder {
 public:
  Builder(const Topology& t, const ReshardProblem& p, Balance b) : t_(t), p_(p), balance_(b) {
    plan_.name = "reshard";
    plan_.tensors.push_back(p.tensor);
    auto add_buffers = [&](const topology::DeviceMesh& m, const ShardingSpec& spec, bool src) {
      const auto all = tiles(p.tensor.shape, spec, m.rows, m.cols);
      for (std::size_t i = 0; i < all.size(); ++i) {
        sim::Region whole{p.tensor.name, all[i], {}, {}, {}, {}};
        plan_.buffers.push_back(sim::Buffer{buffer_name(t, m.devices[i], src), t.node(m.devices[i]).name,
                                            sim::region_bytes(p.tensor, whole), p.tensor.name, all[i]});
      }
    };
    add_buffers(p.src, p.src_spec, true);
    add_buffers(p.dst, p.dst_spec, false);
  }

  // The sender for `bytes` of `task`, preferring candidates on `host` (or
  // -1 for no preference), and charges it.
  NodeId pick(const UnitTask& task, int host, Bytes bytes) {
    std::vector<NodeId> cands;
    for (NodeId s : task.senders)
      if (t_.node(s).host == host) cands.push_back(s);
    if (cands.empty()) cands = task.senders;
    NodeId best = cands.front();
    for (NodeId s : cands) {
      if (balance_ == Balance::device && device_load_[s] < device_load_[best]) best = s;
      if (balance_ == Balance::host_size) {
        const auto hs = host_load_[t_.node(s).host];
        const auto hb = host_load_[t_.node(best).host];
        if (hs < hb || (hs == hb && device_load_[s] < device_load_[best])) best = s;
      }
    }
    device_load_[best] += bytes.count();
    host_load_[t_.node(best).host] += bytes.count();
    return best;
  }

  std::size_t send(NodeId from, NodeId to, const Box& box, std::vector<std::size_t> deps = {}) {
    sim::Task task;
    task.kind = sim::TaskKind::send;
    task.devices = {t_.node(from).name, t_.node(to).name};
    task.size = bytes_of(box);
    task.deps = std::move(deps);
    task.payload.push_back(region(box, from, true, to, false));
    return add(std::move(task));
  }

  sim::Region region(const Box& box, NodeId from, bool from_src, NodeId to, bool to_src) const {
    return sim::Region{
        p_.tensor.name, box, buffer_name(t_, from, from_src), Bytes(0), buffer_name(t_, to, to_src),
        Bytes(0)};
  }

  Bytes bytes_of(const Box& box) const {
    return sim::region_bytes(p_.tensor, sim::Region{p_.tensor.name, box, {}, {}, {}, {}});
  }

  std::size_t add(sim::Task task) {
    task.id = fmt::format("t{}", plan_.tasks.size());
    plan_.tasks.push_back(std::move(task));
    return plan_.tasks.size() - 1;
  }

  sim::Plan take() { return std::move(plan_); }
  const Topology& topo() const { return t_; }

 private:
  const Topology& t_;
  const ReshardProblem& p_;
  Balance balance_;
  sim::Plan plan_;
  std::map<NodeId, std::int64_t> device_load_;
  std::map<int, std::int64_t> host_load_;
};

// Receivers grouped by host, hosts in first-seen order.
std::vector<std::vector<NodeId>> by_host(const Topology& t, const std::vector<NodeId>& devices) {
  std::vector<std::vector<NodeId>> out;
  std::map<int, std::size_t> index;
  for (NodeId d : devices) {
    const int h = t.node(d).host;
    if (!index.contains(h)) {
      index[h] = out.size();
      out.emplace_back();
    }
    out[index[h]].push_back(d);
  }
  return out;
}

void plan_send_recv(Builder& b, const std::vector<UnitTask>& tasks) {
  for (const auto& task : tasks)
    for (NodeId r : task.receivers) b.send(b.pick(task, b.topo().node(r).host, task.bytes), r, task.slice);
}

void plan_allgather(Builder& b, const std::vector<UnitTask>& tasks) {
  const Topology& t = b.topo();
  for (const auto& task : tasks) {
    for (const auto& group : by_host(t, task.receivers)) {
      const auto r = static_cast<std::int64_t>(group.size());
      std::size_t split = task.slice.size();
      for (std::size_t d = 0; d < task.slice.size() && r > 1; ++d)
        if ((task.slice[d].second - task.slice[d].first) % r == 0) {
          split = d;
          break;
        }
      if (r == 1 || split == task.slice.size()) {
        for (NodeId recv : group) b.send(b.pick(task, t.node(recv).host, task.bytes), recv, task.slice);
        continue;
      }
      const std::int64_t len = (task.slice[split].second - task.slice[split].first) / r;
      std::vector<Box> parts;
      std::vector<std::size_t> sends;
      for (std::int64_t k = 0; k < r; ++k) {
        Box part = task.slice;
        part[split] = {task.slice[split].first + k * len, task.slice[split].first + (k + 1) * len};
        const NodeId recv = group[static_cast<std::size_t>(k)];
        sends.push_back(b.send(b.pick(task, t.node(recv).host, b.bytes_of(part)), recv, part));
        parts.push_back(std::move(part));
      }
      sim::Task ag;
      ag.kind = sim::TaskKind::collective;
      ag.op = sim::CollectiveOp::all_gather;
      for (NodeId recv : group) ag.devices.push_back(t.node(recv).name);
      ag.size = task.bytes;
      ag.deps = sends;
      for (std::size_t k = 0; k < group.size(); ++k)
        for (std::size_t j = 0; j < group.size(); ++j)
          if (j != k) ag.payload.push_back(b.region(parts[k], group[k], false, group[j], false));
      b.add(std::move(ag));
    }
  }
}

void plan_broadcast(Builder& b, const std::vector<UnitTask>& tasks, bool signal) {
  const Topology& t = b.topo();
  for (const auto& task : tasks) {
    const NodeId root = b.pick(task, -1, task.bytes);
    sim::Task bc;
    bc.devices = {t.node(root).name};
    // Receivers host by host, the root's own host first: the slice enters
    // each host once and then moves over NVLink.
    auto groups = by_host(t, task.receivers);
    std::stable_partition(groups.begin(), groups.end(),
                          [&](const auto& g) { return t.node(g.front()).host == t.node(root).host; });
    for (const auto& g : groups)
      for (NodeId r : g) bc.devices.push_back(t.node(r).name);
    if (bc.devices.size() == 2) {
      bc.kind = sim::TaskKind::send;
    } else {
      bc.kind = sim::TaskKind::broadcast;
    }
    if (signal) {
      bc.size = Bytes(1);
      bc.chunk = Bytes(1);
    } else {
      bc.size = task.bytes;
      for (const auto& g : groups)
        for (NodeId r : g) bc.payload.push_back(b.region(task.slice, root, true, r, false));
    }
    b.add(std::move(bc));
  }
}

}  // namespace

std::vector<UnitTask> unit_tasks(const ReshardProblem& p) {
  for (NodeId s : p.src.devices)
    if (std::find(p.dst.devices.begin(), p.dst.devices.end(), s) != p.dst.devices.end())
      throw UsageError(
          "the source and destination meshes share devices; cross-mesh resharding needs disjoint meshes");
  const auto src = replica_groups(p.tensor.shape, p.src_spec, p.src);
  const auto dst = replica_groups(p.tensor.shape, p.dst_spec, p.dst);
  std::vector<UnitTask> out;
  const sim::Tensor& tensor = p.tensor;
  for (const auto& [dbox, receivers] : dst)
    for (const auto& [sbox, senders] : src) {
      Box slice = intersect(dbox, sbox);
      if (slice.empty()) continue;
      const Bytes bytes = sim::region_bytes(tensor, sim::Region{tensor.name, slice, {}, {}, {}, {}});
      out.push_back(UnitTask{std::move(slice), bytes, senders, receivers});
    }
  return out;
}

LowerBound lower_bound(const Topology& t, const ReshardProblem& p, const std::vector<UnitTask>& tasks) {
  std::map<int, std::int64_t> in;
  std::map<int, std::int64_t> out;
  for (const auto& task : tasks) {
    std::set<int> sender_hosts;
    for (NodeId s : task.senders) sender_hosts.insert(t.node(s).host);
    std::set<int> receiver_hosts;
    for (NodeId r : task.receivers) receiver_hosts.insert(t.node(r).host);
    bool leaves = false;
    for (int h : receiver_hosts)
      if (!sender_hosts.contains(h)) {
        in[h] += task.bytes.count();
        leaves = true;
      }
    if (leaves && sender_hosts.size() == 1) out[*sender_hosts.begin()] += task.bytes.count();
  }
  // A host's NIC capacity to and from the fabric.
  auto nic_capacity = [&](int h) {
    double c = 0;
    for (NodeId n : t.host_nics(h))
      for (topology::LinkId l = 0; l < t.link_count(); ++l) {
        const auto& link = t.link(l);
        if (link.kind == topology::LinkKind::network && (link.a == n || link.b == n))
          c += t.capacity(l).bytes_per_second_f();
      }
    return c;
  };
  LowerBound lb;
  double worst = 0;
  auto consider = [&](const std::map<int, std::int64_t>& bytes, const char* dir) {
    for (const auto& [h, n] : bytes) {
      const double cap = nic_capacity(h);
      if (cap <= 0) continue;
      const double s = static_cast<double>(n) / cap;
      if (s > worst) {
        worst = s;
        lb.max_host_bytes = Bytes(n);
        lb.bounding_host = fmt::format("{} {}", t.hosts()[static_cast<std::size_t>(h)].name, dir);
      }
    }
  };
  consider(in, "in");
  consider(out, "out");
  if (worst <= 0) return lb;
  Time latency = Time::max();
  for (NodeId s : p.src.devices)
    for (NodeId d : p.dst.devices)
      if (t.node(s).host != t.node(d).host) latency = std::min(latency, t.route(s, d).latency);
  lb.time =
      Time::ps(static_cast<std::int64_t>(worst * 1e12)) + (latency == Time::max() ? Time::zero() : latency);
  return lb;
}

sim::Plan build_plan(const Topology& t, const ReshardProblem& p, const std::vector<UnitTask>& tasks,
                     Strategy s, Balance b) {
  Builder builder(t, p, b);
  switch (s) {
    case Strategy::send_recv:
      plan_send_recv(builder, tasks);
      break;
    case Strategy::allgather:
      plan_allgather(builder, tasks);
      break;
    case Strategy::broadcast:
      plan_broadcast(builder, tasks, false);
      break;
    case Strategy::signal:
      plan_broadcast(builder, tasks, true);
      break;
  }
  sim::Plan plan = builder.take();
  plan.name = fmt::format("reshard {} -> {} ({}, {})", p.src_spec.str(), p.dst_spec.str(), to_string(s),
                          to_string(b));
  return plan;
}

}  // namespace meshsim::planner
