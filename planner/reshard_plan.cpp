// Jobs, sender assignment and plan emission for cross-mesh resharding
// (see planner/reshard.h).

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "planner/plan_devices.h"
#include "planner/reshard.h"
#include "sim/numeric.h"

namespace meshsim::planner {

using topology::NodeId;
using topology::Topology;

namespace {

// Devices grouped by host, hosts in first-seen order.
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

std::string buffer_name(const Topology& t, NodeId d, bool src) {
  return fmt::format("{}:{}", src ? "src" : "dst", t.node(d).name);
}

// Bytes a job sends from its sender.
std::int64_t job_bytes(const std::vector<UnitTask>& tasks, const Job& j, bool per_receiver) {
  return tasks[j.task].bytes.count() * (per_receiver ? static_cast<std::int64_t>(j.receivers.size()) : 1);
}

// Candidates of a job, those on a receiver's host first when there are any.
std::vector<NodeId> candidates(const Topology& t, const UnitTask& u, const Job& j) {
  std::set<int> rh;
  for (NodeId r : j.receivers) rh.insert(t.node(r).host);
  std::vector<NodeId> local;
  for (NodeId s : u.senders)
    if (rh.contains(t.node(s).host)) local.push_back(s);
  return local.empty() ? u.senders : local;
}

// Greedy rounds of host-disjoint jobs (Alpa's size + order heuristic).
Assignment host_order(const Topology& t, const std::vector<UnitTask>& tasks, const std::vector<Job>& jobs,
                      std::uint64_t seed) {
  Assignment a;
  a.sender.assign(jobs.size(), 0);
  a.host_rounds = true;
  std::vector<std::size_t> left(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) left[i] = i;
  std::map<int, std::int64_t> host_load;
  std::mt19937_64 rng(seed);
  while (!left.empty()) {
    std::vector<std::pair<std::size_t, NodeId>> best;
    std::int64_t best_spread = 0;
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::vector<std::size_t> perm = left;
      if (attempt > 0) std::shuffle(perm.begin(), perm.end(), rng);
      std::set<int> used;
      std::vector<std::pair<std::size_t, NodeId>> round;
      std::int64_t lo = INT64_MAX;
      std::int64_t hi = 0;
      for (std::size_t j : perm) {
        std::set<int> rh;
        for (NodeId r : jobs[j].receivers) rh.insert(t.node(r).host);
        if (std::any_of(rh.begin(), rh.end(), [&](int h) { return used.contains(h); })) continue;
        std::optional<NodeId> pick;
        for (NodeId s : candidates(t, tasks[jobs[j].task], jobs[j])) {
          const int sh = t.node(s).host;
          if (used.contains(sh)) continue;
          if (!pick || host_load[sh] < host_load[t.node(*pick).host]) pick = s;
        }
        if (!pick) continue;
        used.insert(rh.begin(), rh.end());
        used.insert(t.node(*pick).host);
        round.emplace_back(j, *pick);
        lo = std::min(lo, tasks[jobs[j].task].bytes.count());
        hi = std::max(hi, tasks[jobs[j].task].bytes.count());
      }
      const std::int64_t spread = round.empty() ? 0 : hi - lo;
      if (round.size() > best.size() || (round.size() == best.size() && spread < best_spread)) {
        best = std::move(round);
        best_spread = spread;
      }
    }
    MESHSIM_ASSERT(!best.empty(), "a round schedules at least one job");
    for (const auto& [j, s] : best) {
      a.order.push_back(j);
      a.sender[j] = s;
      host_load[t.node(s).host] += tasks[jobs[j].task].bytes.count();
      left.erase(std::find(left.begin(), left.end(), j));
    }
  }
  return a;
}

// Depth-first branch-and-bound over (next job, sender) under a host
// occupancy model: a job occupies its sender's and receivers' hosts for
// bytes / (bottleneck of its routes) + latency, starting when all those
// hosts are free. Bound: no host can finish before its busy time plus the
// cheapest durations of the remaining jobs that must use it. Starts from
// the host-order solution and stops after `max_nodes` search nodes: a node
// budget rather than a clock, so that the same input gives the same plan on
// every machine (100,000 nodes take about 50 ms here).
// The host occupancy model search_order explores.
struct SearchOption {
  NodeId sender;
  double seconds;          // bytes / (bottleneck of its routes) + latency
  std::vector<int> hosts;  // indices of the hosts it occupies
};
struct SearchModel {
  std::vector<std::vector<SearchOption>> options;  // per job, per candidate sender
  std::vector<double> cheapest;                    // per job, its shortest option
  std::vector<std::vector<int>> must;              // per job, the hosts every option uses
  std::size_t hosts = 0;
};

SearchModel search_model(const Topology& t, const std::vector<UnitTask>& tasks,
                         const std::vector<Job>& jobs) {
  const std::size_t n = jobs.size();
  SearchModel m;
  m.options.resize(n);
  m.cheapest.assign(n, 0);
  m.must.resize(n);
  std::map<int, std::size_t> host_index;
  auto hix = [&](int h) { return host_index.try_emplace(h, host_index.size()).first->second; };
  for (std::size_t j = 0; j < n; ++j) {
    for (NodeId s : candidates(t, tasks[jobs[j].task], jobs[j])) {
      double bw = 1e30;
      Time lat;
      for (NodeId r : jobs[j].receivers) {
        const auto& route = t.route(s, r);
        if (!route.hops.empty()) bw = std::min(bw, route.bottleneck.bytes_per_second_f());
        lat = std::max(lat, route.latency);
      }
      std::set<int> hs{t.node(s).host};
      for (NodeId r : jobs[j].receivers) hs.insert(t.node(r).host);
      SearchOption o{s, static_cast<double>(tasks[jobs[j].task].bytes.count()) / bw + lat.seconds(), {}};
      for (int h : hs) o.hosts.push_back(static_cast<int>(hix(h)));
      m.options[j].push_back(std::move(o));
    }
    m.cheapest[j] = m.options[j].front().seconds;
    for (const auto& o : m.options[j]) m.cheapest[j] = std::min(m.cheapest[j], o.seconds);
    // Hosts every option of the job uses (its receivers' hosts): what the bound may charge.
    std::set<int> common(m.options[j].front().hosts.begin(), m.options[j].front().hosts.end());
    for (const auto& o : m.options[j]) {
      std::set<int> mine(o.hosts.begin(), o.hosts.end()), keep;
      for (int h : common)
        if (mine.contains(h)) keep.insert(h);
      common = keep;
    }
    m.must[j].assign(common.begin(), common.end());
  }
  m.hosts = host_index.size();
  return m;
}

// The model's makespan of an assignment (jobs in its order, each as early as its hosts allow).
double model_makespan(const SearchModel& m, const Assignment& a) {
  std::vector<double> free(m.hosts, 0);
  double end = 0;
  for (std::size_t j : a.order) {
    const auto& o = *std::find_if(m.options[j].begin(), m.options[j].end(),
                                  [&](const SearchOption& x) { return x.sender == a.sender[j]; });
    double start = 0;
    for (int h : o.hosts) start = std::max(start, free[static_cast<std::size_t>(h)]);
    for (int h : o.hosts) free[static_cast<std::size_t>(h)] = start + o.seconds;
    end = std::max(end, start + o.seconds);
  }
  return end;
}

Assignment search_order(const Topology& t, const std::vector<UnitTask>& tasks, const std::vector<Job>& jobs,
                        std::uint64_t seed, std::uint64_t max_nodes) {
  const std::size_t n = jobs.size();
  const SearchModel model = search_model(t, tasks, jobs);
  const auto& options = model.options;
  const auto& cheapest = model.cheapest;
  const auto& must = model.must;
  const std::size_t hosts = model.hosts;
  Assignment best = host_order(t, tasks, jobs, seed);
  double best_time = model_makespan(model, best);
  Assignment cur;
  cur.sender.assign(n, 0);
  cur.host_rounds = true;
  std::vector<double> free(hosts, 0);
  std::vector<double> pending(hosts, 0);  // Σ cheapest of remaining jobs that must use the host
  for (std::size_t j = 0; j < n; ++j)
    for (int h : must[j]) pending[static_cast<std::size_t>(h)] += cheapest[j];
  std::vector<bool> used(n, false);
  std::uint64_t nodes = 0;
  bool out_of_time = false;
  std::function<void(double)> dfs = [&](double makespan) {
    if (out_of_time) return;
    if (++nodes > max_nodes) {
      out_of_time = true;
      return;
    }
    if (cur.order.size() == n) {
      if (makespan < best_time) {
        best_time = makespan;
        best = cur;
      }
      return;
    }
    for (std::size_t j = 0; j < n && !out_of_time; ++j) {
      if (used[j]) continue;
      for (const auto& o : options[j]) {
        double start = 0;
        for (int h : o.hosts) start = std::max(start, free[static_cast<std::size_t>(h)]);
        const double end = start + o.seconds;
        std::vector<double> saved;
        for (int h : o.hosts) saved.push_back(free[static_cast<std::size_t>(h)]);
        for (int h : o.hosts) free[static_cast<std::size_t>(h)] = end;
        for (int h : must[j]) pending[static_cast<std::size_t>(h)] -= cheapest[j];
        double bound = std::max(makespan, end);
        for (std::size_t h = 0; h < hosts; ++h) bound = std::max(bound, free[h] + pending[h]);
        if (bound < best_time - 1 / sim::kPsPerSecond) {  // better by more than 1 ps
          used[j] = true;
          cur.order.push_back(j);
          cur.sender[j] = o.sender;
          dfs(std::max(makespan, end));
          cur.order.pop_back();
          used[j] = false;
        }
        for (int h : must[j]) pending[static_cast<std::size_t>(h)] += cheapest[j];
        for (std::size_t k = 0; k < o.hosts.size(); ++k)
          free[static_cast<std::size_t>(o.hosts[k])] = saved[k];
      }
    }
  };
  dfs(0);
  return best;
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
  std::size_t send(NodeId from, NodeId to, const Box& box, const std::vector<std::size_t>& deps) {
    plan::Task task;
    task.kind = plan::TaskKind::send;
    task.devices = {device_(from), device_(to)};
    task.size = plan::box_bytes(p_.tensor, box);
    task.deps = deps;
    if (payload_) task.payload.push_back(region(box, from, true, to));
    return add(std::move(task));
  }
  plan::Plan take() { return std::move(plan_); }

 private:
  const ReshardProblem& p_;
  bool payload_;
  plan::Plan plan_;
  PlanDevices device_;
  std::map<NodeId, std::size_t> src_buffer_;  // per source GPU, its buffer
  std::map<NodeId, std::size_t> dst_buffer_;
};

}  // namespace

std::vector<Job> make_jobs(const Topology& t, Strategy s, const std::vector<UnitTask>& tasks) {
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    switch (s) {
      case Strategy::send_recv:
        for (NodeId r : tasks[i].receivers) jobs.push_back(Job{i, {r}});
        break;
      case Strategy::allgather:
        for (auto& g : by_host(t, tasks[i].receivers)) jobs.push_back(Job{i, std::move(g)});
        break;
      case Strategy::broadcast:
      case Strategy::signal: jobs.push_back(Job{i, tasks[i].receivers}); break;
    }
  }
  return jobs;
}

Assignment assign_senders(const Topology& t, const std::vector<UnitTask>& tasks, const std::vector<Job>& jobs,
                          Balance b, std::uint64_t seed) {
  if (b == Balance::host_order) return host_order(t, tasks, jobs, seed);
  if (b == Balance::search) return search_order(t, tasks, jobs, seed, 100'000);
  Assignment a;
  a.sender.assign(jobs.size(), 0);
  std::map<NodeId, std::int64_t> device_load;
  std::map<int, std::int64_t> host_load;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    a.order.push_back(j);
    const auto cands = candidates(t, tasks[jobs[j].task], jobs[j]);
    NodeId best = cands.front();
    for (NodeId s : cands) {
      if (b == Balance::device && device_load[s] < device_load[best]) best = s;
      if (b == Balance::host_size) {
        const auto hs = host_load[t.node(s).host];
        const auto hb = host_load[t.node(best).host];
        if (hs < hb || (hs == hb && device_load[s] < device_load[best])) best = s;
      }
    }
    a.sender[j] = best;
    const std::int64_t bytes = job_bytes(tasks, jobs[j], false);
    device_load[best] += bytes;
    host_load[t.node(best).host] += bytes;
  }
  return a;
}

plan::Plan emit_plan(const Topology& t, const ReshardProblem& p, const std::vector<UnitTask>& tasks,
                     Strategy s, const std::vector<Job>& jobs, const Assignment& a, bool payload) {
  Emitter e(t, p, payload);
  std::map<int, std::size_t> last_on_host;  // host -> final task of the last job there
  for (std::size_t j : a.order) {
    const Job& job = jobs[j];
    const UnitTask& u = tasks[job.task];
    const NodeId sender = a.sender[j];
    std::vector<std::size_t> deps;
    std::set<int> hosts{t.node(sender).host};
    for (NodeId r : job.receivers) hosts.insert(t.node(r).host);
    if (a.host_rounds)
      for (int h : hosts)
        if (auto it = last_on_host.find(h); it != last_on_host.end()) deps.push_back(it->second);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    std::size_t last = 0;
    switch (s) {
      case Strategy::send_recv: last = e.send(sender, job.receivers.front(), u.slice, deps); break;
      case Strategy::broadcast:
      case Strategy::signal: {
        plan::Task bc;
        bc.devices = {e.device(sender)};
        auto groups = by_host(t, job.receivers);
        std::stable_partition(groups.begin(), groups.end(),
                              [&](const auto& g) { return t.node(g.front()).host == t.node(sender).host; });
        for (const auto& g : groups)
          for (NodeId r : g) bc.devices.push_back(e.device(r));
        bc.kind = bc.devices.size() == 2 ? plan::TaskKind::send : plan::TaskKind::broadcast;
        bc.deps = deps;
        if (s == Strategy::signal) {
          bc.size = Bytes(1);
          bc.chunk = Bytes(1);
        } else {
          bc.size = u.bytes;
          if (e.payload())
            for (const auto& g : groups)
              for (NodeId r : g) bc.payload.push_back(e.region(u.slice, sender, true, r));
        }
        last = e.add(std::move(bc));
        break;
      }
      case Strategy::allgather: {
        const auto& group = job.receivers;
        const auto r = static_cast<std::int64_t>(group.size());
        std::size_t split = u.slice.size();
        for (std::size_t d = 0; d < u.slice.size() && r > 1; ++d)
          if ((u.slice[d].second - u.slice[d].first) % r == 0) {
            split = d;
            break;
          }
        if (r == 1 || split == u.slice.size()) {
          for (NodeId recv : group) last = e.send(sender, recv, u.slice, deps);
          break;
        }
        const std::int64_t len = (u.slice[split].second - u.slice[split].first) / r;
        std::vector<Box> parts;
        std::vector<std::size_t> sends;
        for (std::int64_t k = 0; k < r; ++k) {
          Box part = u.slice;
          part[split] = {u.slice[split].first + k * len, u.slice[split].first + (k + 1) * len};
          sends.push_back(e.send(sender, group[static_cast<std::size_t>(k)], part, deps));
          parts.push_back(std::move(part));
        }
        plan::Task ag;
        ag.kind = plan::TaskKind::collective;
        ag.op = plan::CollectiveOp::all_gather;
        for (NodeId recv : group) ag.devices.push_back(e.device(recv));
        ag.size = u.bytes;
        ag.deps = sends;
        for (std::size_t k = 0; k < group.size() && e.payload(); ++k)
          for (std::size_t q = 0; q < group.size(); ++q)
            if (q != k) ag.payload.push_back(e.region(parts[k], group[k], false, group[q]));
        last = e.add(std::move(ag));
        break;
      }
    }
    for (int h : hosts) last_on_host[h] = last;
  }
  plan::Plan plan = e.take();
  plan.name = fmt::format("reshard {} -> {} ({})", p.src_spec.str(), p.dst_spec.str(), to_string(s));
  return plan;
}

plan::Plan build_plan(const Topology& t, const ReshardProblem& p, const std::vector<UnitTask>& tasks,
                      Strategy s, Balance b) {
  const auto jobs = make_jobs(t, s, tasks);
  plan::Plan plan = emit_plan(t, p, tasks, s, jobs, assign_senders(t, tasks, jobs, b));
  plan.name = fmt::format("reshard {} -> {} ({}, {})", p.src_spec.str(), p.dst_spec.str(), to_string(s),
                          to_string(b));
  return plan;
}

}  // namespace meshsim::planner
