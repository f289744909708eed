#include "runtime/host_executor.h"

#include <map>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::runtime {

namespace {

using Box = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::int64_t volume(const Box& b) {
  std::int64_t v = 1;
  for (const auto& [lo, hi] : b) v *= hi - lo;
  return v;
}

// Calls f(global_index, position_in_box) for every element of `box`,
// row-major, where global_index is row-major in `shape`.
template <typename F>
void for_each_element(const Box& box, const std::vector<std::int64_t>& shape, F&& f) {
  const std::size_t rank = box.size();
  std::vector<std::int64_t> idx(rank);
  for (std::size_t d = 0; d < rank; ++d) idx[d] = box[d].first;
  const std::int64_t n = volume(box);
  for (std::int64_t pos = 0; pos < n; ++pos) {
    std::int64_t g = 0;
    for (std::size_t d = 0; d < rank; ++d) g = g * shape[d] + idx[d];
    f(g, pos);
    for (std::size_t d = rank; d-- > 0;) {
      if (++idx[d] < box[d].second) break;
      idx[d] = box[d].first;
    }
  }
}

// Position of global element `g` inside a row-major `box` of a tensor of `shape`.
std::int64_t position_in(const Box& box, const std::vector<std::int64_t>& shape, std::int64_t g) {
  std::vector<std::int64_t> coord(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    coord[d] = g % shape[d];
    g /= shape[d];
  }
  std::int64_t pos = 0;
  for (std::size_t d = 0; d < shape.size(); ++d)
    pos = pos * (box[d].second - box[d].first) + coord[d] - box[d].first;
  return pos;
}

// Order respecting deps and per-(device, stream) plan order (Kahn).
std::vector<std::size_t> execution_order(const sim::Plan& plan) {
  const std::size_t n = plan.tasks.size();
  std::vector<std::vector<std::size_t>> next(n);
  std::vector<std::size_t> indegree(n, 0);
  std::map<std::pair<std::string, int>, std::size_t> last_on_stream;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t d : plan.tasks[i].deps) {
      next[d].push_back(i);
      ++indegree[i];
    }
    for (const auto& dev : plan.tasks[i].devices) {
      const auto key = std::pair{dev, plan.tasks[i].stream};
      if (auto it = last_on_stream.find(key); it != last_on_stream.end()) {
        next[it->second].push_back(i);
        ++indegree[i];
      }
      last_on_stream[key] = i;
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push(i);
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (std::size_t j : next[i])
      if (--indegree[j] == 0) ready.push(j);
  }
  MESHSIM_ASSERT(order.size() == n, "plan dependencies form a cycle (the loader rejects those)");
  return order;
}

}  // namespace

HostCheck execute_on_host(const sim::Plan& plan) {
  std::unordered_map<std::string, const sim::Tensor*> tensors;
  for (const auto& t : plan.tensors) tensors.emplace(t.name, &t);
  std::unordered_map<std::string, std::size_t> buffer_index;
  for (std::size_t b = 0; b < plan.buffers.size(); ++b) buffer_index.emplace(plan.buffers[b].name, b);
  std::vector<bool> written(plan.buffers.size(), false);
  for (const auto& t : plan.tasks)
    for (const auto& r : t.payload) written[buffer_index.at(r.dst_buffer)] = true;

  // Element arrays: boxed buffers hold their box; others hold size / element bytes.
  std::vector<std::vector<std::int64_t>> mem(plan.buffers.size());
  for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
    const auto& buf = plan.buffers[b];
    if (!buf.box.empty()) {
      const sim::Tensor& t = *tensors.at(buf.tensor);
      mem[b].assign(static_cast<std::size_t>(volume(buf.box)), -1);
      if (!written[b])
        for_each_element(buf.box, t.shape, [&](std::int64_t g, std::int64_t pos) {
          mem[b][static_cast<std::size_t>(pos)] = g;
        });
    } else {
      mem[b].assign(static_cast<std::size_t>(buf.size.count()), -1);  // element slots by byte (upper bound)
    }
  }

  HostCheck check;
  for (std::size_t i : execution_order(plan)) {
    for (const auto& r : plan.tasks[i].payload) {
      const sim::Tensor& t = *tensors.at(r.tensor);
      const std::size_t sb = buffer_index.at(r.src_buffer);
      const std::size_t db = buffer_index.at(r.dst_buffer);
      const auto& src = plan.buffers[sb];
      const auto& dst = plan.buffers[db];
      const std::int64_t esize = sim::dtype_size(t.dtype);
      for_each_element(r.box, t.shape, [&](std::int64_t g, std::int64_t pos) {
        const std::int64_t from =
            src.box.empty() ? r.src_offset.count() / esize + pos : position_in(src.box, t.shape, g);
        const std::int64_t to =
            dst.box.empty() ? r.dst_offset.count() / esize + pos : position_in(dst.box, t.shape, g);
        mem[db][static_cast<std::size_t>(to)] = mem[sb][static_cast<std::size_t>(from)];
      });
      check.elements_copied += volume(r.box);
    }
  }

  for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
    const auto& buf = plan.buffers[b];
    if (!written[b] || buf.box.empty()) continue;
    ++check.buffers_checked;
    const sim::Tensor& t = *tensors.at(buf.tensor);
    for_each_element(buf.box, t.shape, [&](std::int64_t g, std::int64_t pos) {
      ++check.elements_checked;
      const std::int64_t got = mem[b][static_cast<std::size_t>(pos)];
      if (got == g) return;
      check.ok = false;
      if (check.errors.size() < 5)
        check.errors.push_back(
            fmt::format("buffer \"{}\" on {}: element {} of \"{}\" holds {}", buf.name, buf.device, g,
                        buf.tensor, got < 0 ? std::string("nothing") : fmt::format("element {}", got)));
    });
  }
  return check;
}

}  // namespace meshsim::runtime
