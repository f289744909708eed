// Sender choice and job order for cross-mesh resharding: the balancing
// modes of reshard/reshard.h, which account per NIC.

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "reshard/reshard.h"
#include "sim/kernel/numeric.h"

namespace meshsim::reshard {

using topology::NodeId;
using topology::Topology;

namespace {

// Candidates of a job, those on a receiver's host first when there are
// any; a scatter part k starts at the task's replica k.
std::vector<NodeId> candidates(const Topology& t, const UnitTask& u, const Job& j) {
  std::set<int> rh;
  for (NodeId r : j.receivers) rh.insert(t.node(r).host);
  std::vector<NodeId> local;
  for (NodeId s : u.senders)
    if (rh.contains(t.node(s).host)) local.push_back(s);
  std::vector<NodeId> out = local.empty() ? u.senders : local;
  std::rotate(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(j.part % out.size()), out.end());
  return out;
}

// The NIC a sender's bytes leave by (its host when it has none).
std::int64_t sender_nic(const Topology& t, NodeId s) {
  const auto n = t.nic_of(s);
  return n ? static_cast<std::int64_t>(*n) : -1 - t.node(s).host;
}

// Greedy rounds of NIC-disjoint jobs (Alpa's size + order heuristic, with
// NICs for hosts).
Assignment nic_order(const Topology& t, const std::vector<UnitTask>& tasks, const Jobs& jobs,
                     std::uint64_t seed) {
  const auto& list = jobs.list;
  Assignment a;
  a.sender.assign(list.size(), 0);
  a.nic_rounds = true;
  std::vector<std::size_t> left(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) left[i] = i;
  std::map<std::int64_t, std::int64_t> nic_load;
  std::vector<std::vector<std::pair<NodeId, std::vector<std::int64_t>>>> options(list.size());
  for (std::size_t j = 0; j < list.size(); ++j)
    for (NodeId s : candidates(t, tasks[list[j].task], list[j]))
      options[j].emplace_back(s, job_nics(t, list[j], s));
  std::mt19937_64 rng(seed);
  while (!left.empty()) {
    std::vector<std::pair<std::size_t, NodeId>> best;
    std::int64_t best_spread = 0;
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::vector<std::size_t> perm = left;
      if (attempt > 0) std::shuffle(perm.begin(), perm.end(), rng);
      std::set<std::int64_t> used;
      std::vector<std::pair<std::size_t, NodeId>> round;
      std::int64_t lo = INT64_MAX;
      std::int64_t hi = 0;
      for (std::size_t j : perm) {
        const std::pair<NodeId, std::vector<std::int64_t>>* pick = nullptr;
        for (const auto& o : options[j]) {
          const auto& nics = o.second;
          if (std::any_of(nics.begin(), nics.end(), [&](std::int64_t n) { return used.contains(n); }))
            continue;
          if (!pick || nic_load[sender_nic(t, o.first)] < nic_load[sender_nic(t, pick->first)]) pick = &o;
        }
        if (!pick) continue;
        used.insert(pick->second.begin(), pick->second.end());
        round.emplace_back(j, pick->first);
        lo = std::min(lo, list[j].bytes.count());
        hi = std::max(hi, list[j].bytes.count());
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
      nic_load[sender_nic(t, s)] += list[j].bytes.count();
      left.erase(std::find(left.begin(), left.end(), j));
    }
  }
  return a;
}

// The NIC occupancy model search_order explores: a job occupies the NICs
// its chain crosses for bytes / (bottleneck of its routes) + latency,
// starting when all of them are free.
struct SearchOption {
  NodeId sender;
  double seconds;
  std::vector<int> nics;  // indices of the NICs it occupies
};
struct SearchModel {
  std::vector<std::vector<SearchOption>> options;  // per job, per candidate sender
  std::vector<double> cheapest;                    // per job, its shortest option
  std::vector<std::vector<int>> must;              // per job, the NICs every option uses
  std::size_t nics = 0;
};

SearchModel search_model(const Topology& t, const std::vector<UnitTask>& tasks, const Jobs& jobs) {
  const auto& list = jobs.list;
  const std::size_t n = list.size();
  SearchModel m;
  m.options.resize(n);
  m.cheapest.assign(n, 0);
  m.must.resize(n);
  std::map<std::int64_t, std::size_t> nic_index;
  auto index = [&](std::int64_t k) { return nic_index.try_emplace(k, nic_index.size()).first->second; };
  for (std::size_t j = 0; j < n; ++j) {
    for (NodeId s : candidates(t, tasks[list[j].task], list[j])) {
      double bw = 1e30;
      Time lat;
      for (NodeId r : list[j].receivers) {
        const auto& route = t.route(s, r);
        if (!route.hops.empty()) bw = std::min(bw, route.bottleneck.bytes_per_second_f());
        lat = std::max(lat, route.latency);
      }
      SearchOption o{s, static_cast<double>(list[j].bytes.count()) / bw + lat.seconds(), {}};
      for (std::int64_t k : job_nics(t, list[j], s)) o.nics.push_back(static_cast<int>(index(k)));
      m.options[j].push_back(std::move(o));
    }
    m.cheapest[j] = m.options[j].front().seconds;
    for (const auto& o : m.options[j]) m.cheapest[j] = std::min(m.cheapest[j], o.seconds);
    // NICs every option of the job uses: what the bound may charge.
    std::set<int> common(m.options[j].front().nics.begin(), m.options[j].front().nics.end());
    for (const auto& o : m.options[j]) {
      std::set<int> mine(o.nics.begin(), o.nics.end()), keep;
      for (int h : common)
        if (mine.contains(h)) keep.insert(h);
      common = keep;
    }
    m.must[j].assign(common.begin(), common.end());
  }
  m.nics = nic_index.size();
  return m;
}

// The model's makespan of an assignment (jobs in its order, each as early as its NICs allow).
double model_makespan(const SearchModel& m, const Assignment& a) {
  std::vector<double> free(m.nics, 0);
  double end = 0;
  for (std::size_t j : a.order) {
    const auto& o = *std::find_if(m.options[j].begin(), m.options[j].end(),
                                  [&](const SearchOption& x) { return x.sender == a.sender[j]; });
    double start = 0;
    for (int h : o.nics) start = std::max(start, free[static_cast<std::size_t>(h)]);
    for (int h : o.nics) free[static_cast<std::size_t>(h)] = start + o.seconds;
    end = std::max(end, start + o.seconds);
  }
  return end;
}

// Depth-first branch-and-bound over (next job, sender) under the NIC
// occupancy model. Bound: no NIC can finish before its busy time plus the
// cheapest durations of the remaining jobs that must use it. Starts from
// the nic_order solution and stops after `max_nodes` search nodes: a node
// budget rather than a clock, so that the same input gives the same plan on
// every machine (100,000 nodes take about 50 ms here).
Assignment search_order(const Topology& t, const std::vector<UnitTask>& tasks, const Jobs& jobs,
                        std::uint64_t seed, std::uint64_t max_nodes) {
  const std::size_t n = jobs.list.size();
  const SearchModel model = search_model(t, tasks, jobs);
  const auto& options = model.options;
  const auto& cheapest = model.cheapest;
  const auto& must = model.must;
  const std::size_t nics = model.nics;
  Assignment best = nic_order(t, tasks, jobs, seed);
  double best_time = model_makespan(model, best);
  Assignment cur;
  cur.sender.assign(n, 0);
  cur.nic_rounds = true;
  std::vector<double> free(nics, 0);
  std::vector<double> pending(nics, 0);  // Σ cheapest of remaining jobs that must use the NIC
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
        for (int h : o.nics) start = std::max(start, free[static_cast<std::size_t>(h)]);
        const double end = start + o.seconds;
        std::vector<double> saved;
        for (int h : o.nics) saved.push_back(free[static_cast<std::size_t>(h)]);
        for (int h : o.nics) free[static_cast<std::size_t>(h)] = end;
        for (int h : must[j]) pending[static_cast<std::size_t>(h)] -= cheapest[j];
        double bound = std::max(makespan, end);
        for (std::size_t h = 0; h < nics; ++h) bound = std::max(bound, free[h] + pending[h]);
        if (bound < best_time - 1 / sim::kernel::kPsPerSecond) {  // better by more than 1 ps
          used[j] = true;
          cur.order.push_back(j);
          cur.sender[j] = o.sender;
          dfs(std::max(makespan, end));
          cur.order.pop_back();
          used[j] = false;
        }
        for (int h : must[j]) pending[static_cast<std::size_t>(h)] += cheapest[j];
        for (std::size_t k = 0; k < o.nics.size(); ++k) free[static_cast<std::size_t>(o.nics[k])] = saved[k];
      }
    }
  };
  dfs(0);
  return best;
}

}  // namespace

Assignment assign_senders(const Topology& t, const std::vector<UnitTask>& tasks, const Jobs& jobs, Balance b,
                          std::uint64_t seed) {
  if (b == Balance::host_order) return nic_order(t, tasks, jobs, seed);
  if (b == Balance::search) return search_order(t, tasks, jobs, seed, 100'000);
  const auto& list = jobs.list;
  Assignment a;
  a.sender.assign(list.size(), 0);
  std::map<NodeId, std::int64_t> device_load;
  std::map<std::int64_t, std::int64_t> nic_load;
  for (std::size_t j = 0; j < list.size(); ++j) {
    a.order.push_back(j);
    const auto cands = candidates(t, tasks[list[j].task], list[j]);
    NodeId best = cands.front();
    for (NodeId s : cands) {
      if (b == Balance::device && device_load[s] < device_load[best]) best = s;
      if (b == Balance::host_size) {
        const auto ns = nic_load[sender_nic(t, s)];
        const auto nb = nic_load[sender_nic(t, best)];
        if (ns < nb || (ns == nb && device_load[s] < device_load[best])) best = s;
      }
    }
    a.sender[j] = best;
    device_load[best] += list[j].bytes.count();
    nic_load[sender_nic(t, best)] += list[j].bytes.count();
  }
  return a;
}

}  // namespace meshsim::reshard
