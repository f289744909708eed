#include "plan/schedule.h"

#include <algorithm>
#include <cstdint>
#include <queue>
#include <span>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::plan {

namespace {

// Why `waiter` waits for `first`: its deps, or the stream they share.
std::string edge_reason(const Plan& plan, std::size_t waiter, std::size_t first) {
  const Task& w = plan.tasks[waiter];
  if (std::find(w.deps.begin(), w.deps.end(), first) != w.deps.end()) return {};
  const Task& f = plan.tasks[first];
  for (const std::size_t d : w.devices)
    if (w.stream == f.stream && std::find(f.devices.begin(), f.devices.end(), d) != f.devices.end())
      return fmt::format("\"{}\" comes before \"{}\" on stream {} of {}", f.id, w.id, w.stream,
                         plan.devices.at(d));
  return {};
}

// Every task Kahn's walk left over waits for another left-over task, so
// walking back through left-over predecessors must revisit one: the cycle.
[[noreturn]] void report_cycle(const Plan& plan, const Schedule& s, const std::vector<std::size_t>& indegree,
                               const std::string& file) {
  std::size_t u = 0;
  while (indegree[u] == 0) ++u;
  std::vector<std::size_t> walk;
  std::vector<int> seen(plan.tasks.size(), -1);
  while (seen[u] < 0) {
    seen[u] = static_cast<int>(walk.size());
    walk.push_back(u);
    for (std::size_t p : s.preds[u])
      if (indegree[p] != 0) {
        u = p;
        break;
      }
  }
  // walk[seen[u]..] is the cycle; each task on it waits for the next.
  const std::vector<std::size_t> cycle(walk.begin() + seen[u], walk.end());
  std::string names;
  std::string streams;
  for (std::size_t k = 0; k < cycle.size(); ++k) {
    names += fmt::format("{} -> ", plan.tasks[cycle[k]].id);
    const std::string why = edge_reason(plan, cycle[k], cycle[(k + 1) % cycle.size()]);
    if (!why.empty()) streams += "; " + why;
  }
  names += plan.tasks[cycle[0]].id;
  const std::size_t at = *std::min_element(cycle.begin(), cycle.end());
  const bool deps_only = streams.empty();
  throw ConfigError(file, fmt::format("tasks[{}].{}", at, deps_only ? "deps" : "stream"),
                    fmt::format("dependency cycle: {} (each waits for the next{})", names, streams));
}

// Sorts v ascending: insertion sort for the few predecessors a task has,
// std::sort beyond.
void sort_small(std::span<std::size_t> v) {
  if (v.size() > 16) {
    std::sort(v.begin(), v.end());
    return;
  }
  for (std::size_t k = 1; k < v.size(); ++k) {
    const std::size_t x = v[k];
    std::size_t j = k;
    for (; j > 0 && v[j - 1] > x; --j) v[j] = v[j - 1];
    v[j] = x;
  }
}

}  // namespace

std::string plan_origin(const Plan& plan) {
  return plan.name.empty() ? std::string("<plan>") : plan.name;
}

Schedule make_schedule(const Plan& plan, const std::string& file) {
  const std::size_t n = plan.tasks.size();
  Schedule s;
  // Per device, the last task seen on each of its streams: streams 0 to
  // kFewStreams - 1 (those planners use) in a table, others listed.
  constexpr std::size_t kNone = SIZE_MAX;
  constexpr std::size_t kFewStreams = 16;
  const std::size_t devices = plan.devices.size();
  std::vector<std::size_t> last_few(devices * kFewStreams, kNone);
  std::vector<std::vector<std::pair<int, std::size_t>>> last_other(devices);
  auto last_on_other = [&](std::size_t dev, int stream) -> std::size_t& {
    auto& others = last_other[dev];
    auto it = std::find_if(others.begin(), others.end(), [&](const auto& e) { return e.first == stream; });
    if (it == others.end()) return others.emplace_back(stream, kNone).second;
    return it->second;
  };
  s.preds.reserve(n, 3 * n);  // a task waits for a few others
  bool in_plan_order = true;  // every predecessor comes earlier in the plan
  for (std::size_t i = 0; i < n; ++i) {
    const Task& t = plan.tasks[i];
    // Task i's predecessors, gathered in place in the table. Its indices
    // are checked as they are read, as check_indices checks them (a second
    // walk over the lists would cost a search about 1 % of its
    // instructions).
    for (const std::size_t d : t.deps) {
      MESHSIM_ASSERT(d < n && d != i, fmt::format("task \"{}\": bad dependency index", t.id));
      s.preds.add(d);
    }
    std::size_t added = kNone;  // the last one added for the stream order
    const bool few = t.stream >= 0 && static_cast<std::size_t>(t.stream) < kFewStreams;
    for (const std::size_t dev : t.devices) {
      MESHSIM_ASSERT(dev < devices, fmt::format("task \"{}\": device index out of range", t.id));
      std::size_t& last = few ? last_few[dev * kFewStreams + static_cast<std::size_t>(t.stream)]
                              : last_on_other(dev, t.stream);
      // (A local copy names its device twice; a task on several devices
      // often follows one task on all of them: it is listed once.)
      if (last != kNone && last != i && last != added) s.preds.add(added = last);
      last = i;
    }
    const std::span<std::size_t> gathered = s.preds.open();
    sort_small(gathered);
    s.preds.trim(static_cast<std::size_t>(gathered.end() - std::unique(gathered.begin(), gathered.end())));
    const std::span<std::size_t> p = s.preds.open();
    if (!p.empty() && p.back() >= i) in_plan_order = false;
    s.preds.close();
  }
  s.succs = s.preds.reverse();
  s.order.reserve(n);
  if (in_plan_order) {  // then the smallest ready task is always the next one
    for (std::size_t i = 0; i < n; ++i) s.order.push_back(i);
    return s;
  }
  std::vector<std::size_t> indegree(n);
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    indegree[i] = s.preds[i].size();
    if (indegree[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    s.order.push_back(i);
    for (std::size_t j : s.succs[i])
      if (--indegree[j] == 0) ready.push(j);
  }
  if (s.order.size() != n) report_cycle(plan, s, indegree, file);
  return s;
}

Timeline make_timeline(const Schedule& schedule, std::vector<TaskSpan> spans) {
  MESHSIM_ASSERT(spans.size() == schedule.preds.size(), "one span per task");
  Timeline tl;
  tl.tasks = std::move(spans);
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t last = kNone;
  for (std::size_t i = 0; i < tl.tasks.size(); ++i)
    if (last == kNone || tl.tasks[i].end >= tl.tasks[last].end) last = i;
  if (last == kNone) return tl;
  tl.makespan = tl.tasks[last].end;
  for (std::size_t t = last; t != kNone;) {
    tl.critical_path.push_back(t);
    std::size_t by = kNone;
    for (std::size_t p : schedule.preds[t])  // ascending: `>=` keeps the later on ties
      if (by == kNone || tl.tasks[p].end >= tl.tasks[by].end) by = p;
    t = by;
  }
  std::reverse(tl.critical_path.begin(), tl.critical_path.end());
  return tl;
}

}  // namespace meshsim::plan
