// Redistribution synthesis and the XLA-style baseline
// (planner/redistribute/synthesis.h).

#include "planner/redistribute/synthesis.h"

#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "sim/executor.h"

namespace meshsim::planner::redistribute {

StepTimer::StepTimer(const topology::Topology& t, const Problem& p) : topo_(t), base_(p) {}

bool StepTimer::serves(const Problem& p) const {
  return p.mesh.devices == base_.mesh.devices && p.mesh.rows == base_.mesh.rows &&
         p.tensor.shape == base_.tensor.shape && p.tensor.dtype == base_.tensor.dtype;
}

Time StepTimer::time(const ShardingSpec& from, const Step& s) {
  if (!s.moves_data()) return Time::zero();
  const std::string key = from.str() + " | " + s.str();
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  Problem q = base_;
  q.src = from;
  ++simulations_;
  const Time t = sim::simulate(emit(topo_, q, {s}, false).plan, topo_).makespan;
  cache_.emplace(key, t);
  return t;
}

namespace {

// Dijkstra's state: a type and the elements of the buffer a device holds.
struct State {
  std::size_t type = 0;
  std::int64_t held = 0;
  auto operator<=>(const State&) const = default;
};
struct Reached {
  Time time;
  std::size_t steps = 0;
  std::optional<State> prev;
  Step step;
};

}  // namespace

std::vector<Step> synthesize(const Problem& p, StepTimer& timer, std::optional<Bytes> memory_limit) {
  MESHSIM_ASSERT(timer.serves(p), "the step timer was made for this mesh and tensor");
  const auto& shape = p.tensor.shape;
  const std::vector<ShardingSpec> types = all_types(shape, p.axes);
  const auto index = [&](const ShardingSpec& s) -> std::size_t {
    for (std::size_t i = 0; i < types.size(); ++i)
      if (types[i].dims == s.dims) return i;
    MESHSIM_ASSERT(false, "every fitting type is enumerated");
    return 0;
  };
  const std::int64_t esize = plan::dtype_size(p.tensor.dtype);
  const std::int64_t src_local = local_elements(shape, p.src, p.axes);
  const std::int64_t bound = std::max(src_local, local_elements(shape, p.dst, p.axes));
  if (memory_limit && src_local * esize > memory_limit->count())
    throw UsageError(fmt::format("the source tile ({}) alone exceeds the memory limit ({})",
                                 human_string(Bytes(src_local * esize)), human_string(*memory_limit)));
  const std::size_t goal = index(p.dst);
  std::map<State, Reached> best;
  using Entry = std::tuple<Time, std::size_t, std::size_t, State>;  // time, steps, order, state
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  std::size_t order = 0;
  const State start{index(p.src), src_local};
  best[start] = Reached{Time::zero(), 0, std::nullopt, Step{}};
  queue.emplace(Time::zero(), 0, order++, start);
  while (!queue.empty()) {
    const auto [time, steps, seq, at] = queue.top();
    queue.pop();
    const Reached& here = best.at(at);
    if (here.time != time || here.steps != steps) continue;  // a stale entry
    if (at.type == goal) {
      std::vector<Step> out;
      for (State s = at; best.at(s).prev; s = *best.at(s).prev) out.push_back(best.at(s).step);
      return {out.rbegin(), out.rend()};
    }
    for (Step& s : next_steps(types[at.type], types, p.axes)) {
      State to{index(s.after), at.held};
      if (s.moves_data()) {
        to.held = local_elements(shape, s.after, p.axes);
        if (to.held > bound) continue;
        if (memory_limit && (at.held + to.held) * esize > memory_limit->count()) continue;
      }
      const Time t = time + timer.time(types[at.type], s);
      auto it = best.find(to);
      if (it != best.end() && std::pair(it->second.time, it->second.steps) <= std::pair(t, steps + 1))
        continue;
      best[to] = Reached{t, steps + 1, at, std::move(s)};
      queue.emplace(t, steps + 1, order++, to);
    }
  }
  throw UsageError(fmt::format(
      "no sequence of steps takes {} to {} on a {}x{} mesh with every buffer within {}{}", p.src.str(),
      p.dst.str(), p.axes.rows, p.axes.cols, human_string(Bytes(bound * esize)),
      memory_limit ? fmt::format(" and the memory limit {}", human_string(*memory_limit)) : std::string()));
}

namespace {

// Slices from `from` to `to`, where each dimension's axes in `from` are a
// prefix of its axes in `to`.
void append_slices(ShardingSpec from, const ShardingSpec& to, std::vector<Step>& out) {
  for (std::size_t d = 0; d < to.dims.size(); ++d)
    for (std::size_t k = from.dims[d].size(); k < to.dims[d].size(); ++k) {
      from.dims[d].push_back(to.dims[d][k]);
      out.push_back(Step{StepKind::slice, static_cast<int>(d), -1, {to.dims[d][k]}, from});
    }
}

bool refines(const ShardingSpec& from, const ShardingSpec& to) {
  for (std::size_t d = 0; d < to.dims.size(); ++d) {
    const auto& a = from.dims[d];
    const auto& b = to.dims[d];
    if (a.size() > b.size() || !std::equal(a.begin(), a.end(), b.begin())) return false;
  }
  return true;
}

}  // namespace

std::vector<Step> xla_style(const Problem& p) {
  std::vector<Step> out;
  if (refines(p.src, p.dst)) {
    append_slices(p.src, p.dst, out);
    return out;
  }
  for (Step& s : next_steps(p.src, {p.dst}, p.axes))
    if (s.kind == StepKind::permute || s.kind == StepKind::all_to_all) return {std::move(s)};
  ShardingSpec at = p.src;
  for (std::size_t d = 0; d < at.dims.size(); ++d) {
    if (at.dims[d].empty()) continue;
    Step s{StepKind::all_gather, static_cast<int>(d), -1, at.dims[d], at};
    s.after.dims[d].clear();
    at = s.after;
    out.push_back(std::move(s));
  }
  append_slices(at, p.dst, out);
  return out;
}

}  // namespace meshsim::planner::redistribute
