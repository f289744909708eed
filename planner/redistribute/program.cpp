// Plans of typed step sequences (planner/redistribute/program.h).

#include "planner/redistribute/program.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "planner/plan_devices.h"

namespace meshsim::planner::redistribute {

using topology::NodeId;
using topology::Topology;

namespace {

ShardingSpec without_unit_axes(ShardingSpec s, const Axes& axes) {
  for (auto& list : s.dims) std::erase_if(list, [&](int a) { return axes.size(a) == 1; });
  return s;
}

// What a device holds while a sequence runs.
struct Held {
  Box buffer_box;                     // its buffer's box (what it holds)
  Box tile;                           // its tile under the current type (inside buffer_box)
  std::size_t buffer = 0;             // plan buffer index (payload plans)
  std::optional<std::size_t> writer;  // the task that wrote the buffer
};

class StepEmitter {
 public:
  StepEmitter(const Topology& t, const Problem& p, bool payload)
      : t_(t), p_(p), payload_(payload), device_(t, plan_), held_(p.mesh.size()) {
    if (payload) plan_.tensors.push_back(p.tensor);
    for (std::size_t i = 0; i < held_.size(); ++i) {
      const Box box = device_tile(p.tensor.shape, p.src, p.axes, i);
      held_[i] = Held{box, box, new_buffer("src", i, box), std::nullopt};
    }
  }

  StepReport run(std::size_t k, const Step& s) {
    StepReport r{s, {}, {}, {}, {}};
    const std::string tag = fmt::format("s{}", k + 1);
    std::vector<Held> next = held_;
    for (std::size_t i = 0; i < held_.size(); ++i)
      next[i].tile = device_tile(p_.tensor.shape, s.after, p_.axes, i);
    if (s.kind == StepKind::slice) {
      held_ = std::move(next);
      for (const Held& h : held_) r.peak_memory = std::max(r.peak_memory, bytes(h.buffer_box));
      return r;
    }
    // Every device that gets a new tile gets a new buffer.
    std::vector<bool> fresh(held_.size(), true);
    if (s.kind == StepKind::permute)
      for (std::size_t i = 0; i < held_.size(); ++i) fresh[i] = next[i].tile != held_[i].tile;
    for (std::size_t i = 0; i < held_.size(); ++i) {
      if (!fresh[i]) continue;
      next[i].buffer_box = next[i].tile;
      next[i].buffer = new_buffer(tag, i, next[i].tile);
      r.written = std::max(r.written, bytes(next[i].tile));
    }
    if (s.kind == StepKind::permute)
      permute(next, fresh, r);
    else
      collectives(s, next, r);
    for (std::size_t i = 0; i < held_.size(); ++i)
      r.peak_memory =
          std::max(r.peak_memory, bytes(held_[i].buffer_box) + (fresh[i] ? bytes(next[i].tile) : Bytes(0)));
    held_ = std::move(next);
    return r;
  }

  [[nodiscard]] const std::vector<Held>& held() const { return held_; }
  plan::Plan take() { return std::move(plan_); }

 private:
  Bytes bytes(const Box& b) const { return plan::box_bytes(p_.tensor, b); }
  bool cross_host(std::size_t a, std::size_t b) const {
    return t_.node(p_.mesh.devices[a]).host != t_.node(p_.mesh.devices[b]).host;
  }
  std::size_t new_buffer(const std::string& tag, std::size_t i, const Box& box) {
    if (!payload_) return 0;
    const NodeId n = p_.mesh.devices[i];
    plan_.buffers.push_back(
        plan::Buffer{fmt::format("{}:{}", tag, t_.node(n).name), device_(n), bytes(box), 0, box});
    return plan_.buffers.size() - 1;
  }
  void count(std::size_t from, std::size_t to, Bytes b, StepReport& r) const {
    if (from == to) return;
    r.moved += b;
    if (cross_host(from, to)) r.cross_host += b;
  }
  std::size_t add(plan::Task task, const std::vector<std::size_t>& readers, std::vector<Held>& next,
                  const std::vector<std::size_t>& writes) {
    for (std::size_t i : readers)
      if (held_[i].writer) task.deps.push_back(*held_[i].writer);
    std::sort(task.deps.begin(), task.deps.end());
    task.deps.erase(std::unique(task.deps.begin(), task.deps.end()), task.deps.end());
    task.id = fmt::format("t{}", plan_.tasks.size());
    plan_.tasks.push_back(std::move(task));
    for (std::size_t i : writes) next[i].writer = plan_.tasks.size() - 1;
    return plan_.tasks.size() - 1;
  }
  plan::Region region(const Box& box, std::size_t from, std::size_t to_buffer) const {
    return plan::Region{0, box, held_[from].buffer, Bytes(0), to_buffer, Bytes(0)};
  }

  // all-gather and all-to-all: one collective per group over the step's axes.
  void collectives(const Step& s, std::vector<Held>& next, StepReport& r) {
    const bool gather = s.kind == StepKind::all_gather;
    for (const auto& group : axis_groups(p_.axes, s.axes)) {
      plan::Task task;
      task.kind = plan::TaskKind::collective;
      task.op = gather ? plan::CollectiveOp::all_gather : plan::CollectiveOp::all_to_all;
      for (std::size_t i : group) task.devices.push_back(device_(p_.mesh.devices[i]));
      // nccl-tests sizes: all-gather the gathered output, all-to-all what one rank sends.
      task.size = bytes(gather ? next[group.front()].tile : held_[group.front()].tile);
      for (std::size_t from : group)
        for (std::size_t to : group) {
          const Box piece = intersect(held_[from].tile, next[to].tile);
          if (piece.empty()) continue;
          count(from, to, bytes(piece), r);
          if (payload_) task.payload.push_back(region(piece, from, next[to].buffer));
        }
      add(std::move(task), group, next, group);
    }
  }

  // permute: each device that needs a new tile receives it whole from a
  // holder: one on its own host if any, else the holder that has sent least.
  // The sends run at once, as one NCCL group would: each takes the lowest
  // stream that neither of its devices uses yet in this step.
  void permute(std::vector<Held>& next, const std::vector<bool>& fresh, StepReport& r) {
    std::vector<int> sent(held_.size(), 0);
    std::vector<std::vector<int>> streams(held_.size());
    for (std::size_t to = 0; to < held_.size(); ++to) {
      if (!fresh[to]) continue;
      std::optional<std::size_t> best;
      for (std::size_t from = 0; from < held_.size(); ++from) {
        if (from == to || held_[from].tile != next[to].tile) continue;
        const auto key = [&](std::size_t f) { return std::pair(cross_host(f, to), sent[f]); };
        if (!best || key(from) < key(*best)) best = from;
      }
      MESHSIM_ASSERT(best.has_value(), "a permute's new tile is an old tile");
      ++sent[*best];
      plan::Task task;
      task.kind = plan::TaskKind::send;
      task.devices = {device_(p_.mesh.devices[*best]), device_(p_.mesh.devices[to])};
      task.size = bytes(next[to].tile);
      auto& a = streams[*best];
      auto& b = streams[to];
      while (std::find(a.begin(), a.end(), task.stream) != a.end() ||
             std::find(b.begin(), b.end(), task.stream) != b.end())
        ++task.stream;
      a.push_back(task.stream);
      b.push_back(task.stream);
      count(*best, to, task.size, r);
      if (payload_) task.payload.push_back(region(next[to].tile, *best, next[to].buffer));
      add(std::move(task), {*best}, next, {to});
    }
  }

  const Topology& t_;
  const Problem& p_;
  bool payload_;
  plan::Plan plan_;
  PlanDevices device_;
  std::vector<Held> held_;  // per row-major mesh device
};

}  // namespace

Problem make_problem(const Topology& t, plan::Tensor tensor, std::string_view mesh, std::string_view src_spec,
                     std::string_view dst_spec) {
  Problem p;
  p.mesh = topology::select_mesh(t, mesh);
  p.axes = Axes{p.mesh.rows, p.mesh.cols};
  const std::size_t rank = tensor.shape.size();
  const ShardingSpec src = ShardingSpec::parse(src_spec, rank);
  const ShardingSpec dst = ShardingSpec::parse(dst_spec, rank);
  // tiles() names the dimension that does not split evenly.
  (void)tiles(tensor.shape, src, p.mesh.rows, p.mesh.cols);
  (void)tiles(tensor.shape, dst, p.mesh.rows, p.mesh.cols);
  p.src = without_unit_axes(src, p.axes);
  p.dst = without_unit_axes(dst, p.axes);
  p.tensor = std::move(tensor);
  return p;
}

Emission emit(const Topology& t, const Problem& p, const std::vector<Step>& steps, bool payload) {
  StepEmitter e(t, p, payload);
  Emission out;
  const Bytes src_shard = plan::box_bytes(p.tensor, device_tile(p.tensor.shape, p.src, p.axes, 0));
  const Bytes dst_shard = plan::box_bytes(p.tensor, device_tile(p.tensor.shape, p.dst, p.axes, 0));
  out.max_shard = std::max(src_shard, dst_shard);
  out.peak_memory = src_shard;
  out.between_max = src_shard;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    out.steps.push_back(e.run(k, steps[k]));
    const StepReport& r = out.steps.back();
    out.moved += r.moved;
    out.cross_host += r.cross_host;
    out.peak_memory = std::max(out.peak_memory, r.peak_memory);
    for (const Held& h : e.held())
      out.between_max = std::max(out.between_max, plan::box_bytes(p.tensor, h.buffer_box));
  }
  out.plan = e.take();
  return out;
}

}  // namespace meshsim::planner::redistribute
