#include <algorithm>
#include <map>
#include <queue>

#include "core/error.h"
#include "runtime/backend.h"

namespace meshsim::runtime {

Schedule make_schedule(const sim::Plan& plan) {
  const std::size_t n = plan.tasks.size();
  Schedule s;
  s.preds.resize(n);
  s.succs.resize(n);
  std::map<std::pair<std::string_view, int>, std::size_t> last_on_stream;
  for (std::size_t i = 0; i < n; ++i) {
    auto& p = s.preds[i];
    p.assign(plan.tasks[i].deps.begin(), plan.tasks[i].deps.end());
    for (const auto& dev : plan.tasks[i].devices) {
      const auto key = std::pair<std::string_view, int>{dev, plan.tasks[i].stream};
      if (auto it = last_on_stream.find(key); it != last_on_stream.end()) p.push_back(it->second);
      last_on_stream[key] = i;
    }
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    for (std::size_t d : p) s.succs[d].push_back(i);
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
  MESHSIM_ASSERT(s.order.size() == n, "plan dependencies form a cycle (the loader rejects those)");
  return s;
}

}  // namespace meshsim::runtime
