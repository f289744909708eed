// Plan emission for cross-mesh resharding (see reshard/reshard.h): the
// jobs of a strategy, in an assignment's order from its senders.

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "reshard/reshard.h"
#include "sim/plan_devices.h"

namespace meshsim::reshard {

using topology::NodeId;
using topology::Topology;

namespace {

constexpr std::size_t kScatterStreams = 1024;  // every stream a plan may name
constexpr int kLocalStream = 1023;             // local copies overlap the transfers

std::string buffer_name(const Topology& t, NodeId d, bool src) {
  return fmt::format("{}:{}", src ? "src" : "dst", t.node(d).name);
}

// Builds a resharding plan; without payloads (for scoring candidates) it
// adds no tensor, buffers or regions.
class Emitter {
 public:
  Emitter(const Topology& t, const ReshardProblem& p, bool payload)
      : p_(p), payload_(payload), device_(t, plan_) {
    if (!payload) return;
    plan_.tensors.push_back(p.tensor);
    auto add_buffers = [&](const topology::DeviceMesh& m, const ShardingSpec& spec, bool src) {
      const auto all = tiles(p.tensor.shape, spec, m.rows, m.cols);
      for (std::size_t i = 0; i < all.size(); ++i) {
        (src ? src_buffer_ : dst_buffer_)[m.devices[i]] = plan_.buffers.size();
        plan_.buffers.push_back(plan::Buffer{buffer_name(t, m.devices[i], src), device_(m.devices[i]),
                                             plan::box_bytes(p.tensor, all[i]), 0, all[i]});
      }
    };
    add_buffers(p.src, p.src_spec, true);
    add_buffers(p.dst, p.dst_spec, false);
  }

  std::size_t device(NodeId n) { return device_(n); }
  [[nodiscard]] bool payload() const { return payload_; }
  plan::Region region(const Box& box, NodeId from, bool from_src, NodeId to) const {
    return plan::Region{
        0, box, (from_src ? src_buffer_ : dst_buffer_).at(from), Bytes(0), dst_buffer_.at(to), Bytes(0)};
  }
  std::size_t add(plan::Task task) {
    task.id = fmt::format("t{}", plan_.tasks.size());
    plan_.tasks.push_back(std::move(task));
    return plan_.tasks.size() - 1;
  }
  std::size_t send(NodeId from, NodeId to, const Box& box, const std::vector<std::size_t>& deps,
                   int stream = 0) {
    plan::Task task;
    task.kind = plan::TaskKind::send;
    task.devices = {device_(from), device_(to)};
    task.size = plan::box_bytes(p_.tensor, box);
    task.deps = deps;
    task.stream = stream;
    if (payload_) task.payload.push_back(region(box, from, true, to));
    return add(std::move(task));
  }
  // Copies `box` from d's source buffer to its destination buffer.
  void local_copy(NodeId d, const Box& box) { local_[d].push_back(send(d, d, box, {}, kLocalStream)); }
  // The all-gather that rebuilds g's tile on its members, after `sends`
  // and the members' local copies.
  void gather(const Gather& g, std::vector<std::size_t> sends) {
    for (NodeId m : g.members)
      if (auto it = local_.find(m); it != local_.end())
        sends.insert(sends.end(), it->second.begin(), it->second.end());
    plan::Task ag;
    ag.kind = plan::TaskKind::collective;
    ag.op = plan::CollectiveOp::all_gather;
    for (NodeId m : g.members) ag.devices.push_back(device_(m));
    ag.size = g.bytes;
    std::sort(sends.begin(), sends.end());
    ag.deps = std::move(sends);
    for (std::size_t k = 0; k < g.members.size() && payload_; ++k)
      for (std::size_t q = 0; q < g.members.size(); ++q)
        if (q != k) ag.payload.push_back(region(g.parts[k], g.members[k], false, g.members[q]));
    add(std::move(ag));
  }
  plan::Plan take() { return std::move(plan_); }

 private:
  const ReshardProblem& p_;
  bool payload_;
  plan::Plan plan_;
  sim::PlanDevices device_;
  std::map<NodeId, std::size_t> src_buffer_;  // per source GPU, its buffer
  std::map<NodeId, std::size_t> dst_buffer_;
  std::map<NodeId, std::vector<std::size_t>> local_;  // per device, its local copies
};

}  // namespace

plan::Plan emit_plan(const Topology& t, const ReshardProblem& p, Strategy s, const Jobs& jobs,
                     const Assignment& a, bool payload) {
  Emitter e(t, p, payload);
  std::map<std::int64_t, std::size_t> last_on_nic;  // NIC -> final task of the last job there
  std::vector<std::vector<std::size_t>> gather_sends(jobs.gathers.size());
  std::vector<std::size_t> gather_left(jobs.gathers.size(), 0);
  for (const Job& j : jobs.list)
    if (j.gather != SIZE_MAX) ++gather_left[j.gather];
  for (const auto& [d, box] : jobs.local) e.local_copy(d, box);
  // A gather no job feeds has its parts locally already; it runs unless
  // every member holds its whole tile.
  const auto whole_tile_local = [&](const Gather& g) {
    for (NodeId m : g.members) {
      std::int64_t held = 0;
      for (const auto& [d, box] : jobs.local)
        if (d == m) held += volume(intersect(box, g.tile));
      if (held < volume(g.tile)) return false;
    }
    return true;
  };
  for (std::size_t g = 0; g < jobs.gathers.size(); ++g)
    if (gather_left[g] == 0 && jobs.gathers[g].members.size() > 1 && !whole_tile_local(jobs.gathers[g]))
      e.gather(jobs.gathers[g], {});
  for (std::size_t j : a.order) {
    const Job& job = jobs.list[j];
    const NodeId sender = a.sender[j];
    const auto nics = job_nics(t, job, sender);
    std::vector<std::size_t> deps;
    if (a.nic_rounds)
      for (std::int64_t n : nics)
        if (auto it = last_on_nic.find(n); it != last_on_nic.end()) deps.push_back(it->second);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    std::size_t last = 0;
    if (s == Strategy::send_recv || s == Strategy::allgather) {
      last = e.send(sender, job.receivers.front(), job.box, deps);
    } else {
      const auto chain = job_chain(t, job, sender);
      plan::Task bc;
      for (NodeId d : chain) bc.devices.push_back(e.device(d));
      bc.kind = chain.size() == 2 ? plan::TaskKind::send : plan::TaskKind::broadcast;
      bc.deps = deps;
      // A scatter's parts cross the same receivers at once: a stream each.
      if (s == Strategy::scatter) bc.stream = static_cast<int>(j % kScatterStreams);
      if (s == Strategy::signal) {
        bc.size = Bytes(1);
        bc.chunk = Bytes(1);
      } else {
        bc.size = job.bytes;
        if (e.payload())
          for (std::size_t k = 1; k < chain.size(); ++k)
            bc.payload.push_back(e.region(job.box, sender, true, chain[k]));
      }
      last = e.add(std::move(bc));
    }
    for (std::int64_t n : nics) last_on_nic[n] = last;
    if (job.gather == SIZE_MAX) continue;
    gather_sends[job.gather].push_back(last);
    if (--gather_left[job.gather] == 0) e.gather(jobs.gathers[job.gather], gather_sends[job.gather]);
  }
  plan::Plan plan = e.take();
  plan.name = fmt::format("reshard {} -> {} ({})", p.src_spec.str(), p.dst_spec.str(), to_string(s));
  return plan;
}

plan::Plan build_plan(const Topology& t, const ReshardProblem& p, const std::vector<UnitTask>& tasks,
                      Strategy s, Balance b) {
  const Jobs jobs = make_jobs(t, p, s, tasks);
  plan::Plan plan = emit_plan(t, p, s, jobs, assign_senders(t, tasks, jobs, b));
  plan.name = fmt::format("reshard {} -> {} ({}, {})", p.src_spec.str(), p.dst_spec.str(), to_string(s),
                          to_string(b));
  return plan;
}

}  // namespace meshsim::reshard
