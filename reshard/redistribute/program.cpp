// Plans of typed step sequences (reshard/redistribute/program.h).

#include "reshard/redistribute/program.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_limit.h"
#include "sim/plan_devices.h"

namespace meshsim::reshard::redistribute {

using topology::NodeId;
using topology::Topology;

namespace {

ShardingSpec without_unit_axes(ShardingSpec s, const Axes& axes) {
  for (auto& list : s.dims) std::erase_if(list, [&](int a) { return axes.size(a) == 1; });
  return s;
}

// What a device holds while a sequence runs.
struct Held {
  Box buffer_box;                    // its buffer's box (what it holds)
  Box tile;                          // its tile under the current type (inside buffer_box)
  std::size_t buffer = 0;            // plan buffer index (payload plans)
  std::vector<std::size_t> writers;  // the tasks that wrote the buffer
};

// What a direct step holds per send while its plan is built and simulated:
// measured at 1.5 KB (`meshsim redistribute` of a 65536x65536 f16 tensor on
// 64 DGX-H100, "S0 S1" to "S1 S0": 262,144 sends in 398 MB), rounded up.
constexpr double kBytesPerSend = 2000;

// The streams each device's sends of one step use: every send gets the
// lowest stream free on both its devices, so that a device's sends all run
// at once. Scanning starts at the higher of the two devices' lowest free
// streams (every stream below a device's lowest free one is taken there).
class StreamsInUse {
 public:
  int take(NodeId src, NodeId dst) {
    Device& a = devices_[src];
    Device& b = devices_[dst];
    int k = std::max(a.lowest_free, b.lowest_free);
    while (a.uses(k) || b.uses(k)) ++k;
    a.use(k);
    if (src != dst) b.use(k);
    return k;
  }

 private:
  struct Device {
    std::vector<bool> used;
    int lowest_free = 0;
    [[nodiscard]] bool uses(int k) const {
      return static_cast<std::size_t>(k) < used.size() && used[static_cast<std::size_t>(k)];
    }
    void use(int k) {
      if (used.size() <= static_cast<std::size_t>(k)) used.resize(static_cast<std::size_t>(k) + 1, false);
      used[static_cast<std::size_t>(k)] = true;
      while (uses(lowest_free)) ++lowest_free;
    }
  };
  std::map<NodeId, Device> devices_;
};

class StepEmitter {
 public:
  StepEmitter(const Topology& t, const Problem& p, bool payload)
      : t_(t), p_(p), payload_(payload), device_(t, plan_), held_(p.mesh.size()) {
    if (payload) plan_.tensors.push_back(p.tensor);
    for (std::size_t i = 0; i < held_.size(); ++i) {
      const Box box = device_tile(p.tensor.shape, p.src, p.axes, i);
      held_[i] = Held{box, box, new_buffer("src", p.mesh.devices[i], box), {}};
    }
  }

  StepReport run(std::size_t k, const Step& s) {
    const std::string tag = fmt::format("s{}", k + 1);
    if (s.kind == StepKind::move) return move(tag, s);
    StepReport r{s, {}, {}, {}, {}};
    std::vector<Held> next = held_;
    for (std::size_t i = 0; i < held_.size(); ++i)
      next[i].tile = device_tile(p_.tensor.shape, s.after, axes(), i);
    if (s.kind == StepKind::slice) {
      held_ = std::move(next);
      for (const Held& h : held_) r.peak_memory = std::max(r.peak_memory, bytes(h.buffer_box));
      return r;
    }
    // Every device that gets a new tile gets a new buffer.
    std::vector<bool> fresh(held_.size(), true);
    const bool direct_step = s.kind == StepKind::permute || s.kind == StepKind::exchange;
    if (direct_step)
      for (std::size_t i = 0; i < held_.size(); ++i) fresh[i] = next[i].tile != held_[i].tile;
    for (std::size_t i = 0; i < held_.size(); ++i) {
      if (!fresh[i]) continue;
      next[i].writers.clear();
      next[i].buffer_box = next[i].tile;
      next[i].buffer = new_buffer(tag, mesh().devices[i], next[i].tile);
      r.written = std::max(r.written, bytes(next[i].tile));
    }
    if (direct_step)
      direct(next, fresh, mesh(), r);
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
  const topology::DeviceMesh& mesh() const { return dst_side_ ? p_.dst_mesh : p_.mesh; }
  const Axes& axes() const { return dst_side_ ? p_.dst_axes : p_.axes; }
  Bytes bytes(const Box& b) const { return plan::box_bytes(p_.tensor, b); }
  bool cross_host(NodeId a, NodeId b) const { return t_.node(a).host != t_.node(b).host; }
  std::size_t new_buffer(const std::string& tag, NodeId n, const Box& box) {
    if (!payload_) return 0;
    plan_.buffers.push_back(
        plan::Buffer{fmt::format("{}:{}", tag, t_.node(n).name), device_(n), bytes(box), 0, box});
    return plan_.buffers.size() - 1;
  }
  void count(NodeId from, NodeId to, Bytes b, StepReport& r) const {
    if (from == to) return;
    r.moved += b;
    if (cross_host(from, to)) r.cross_host += b;
  }
  std::size_t add(plan::Task task, const std::vector<std::size_t>& readers, std::vector<Held>& next,
                  const std::vector<std::size_t>& writes) {
    for (std::size_t i : readers)
      task.deps.insert(task.deps.end(), held_[i].writers.begin(), held_[i].writers.end());
    std::sort(task.deps.begin(), task.deps.end());
    task.deps.erase(std::unique(task.deps.begin(), task.deps.end()), task.deps.end());
    task.id = fmt::format("t{}", plan_.tasks.size());
    plan_.tasks.push_back(std::move(task));
    for (std::size_t i : writes) next[i].writers.push_back(plan_.tasks.size() - 1);
    return plan_.tasks.size() - 1;
  }
  plan::Region region(const Box& box, std::size_t from, std::size_t to_buffer) const {
    return plan::Region{0, box, held_[from].buffer, Bytes(0), to_buffer, Bytes(0)};
  }

  // all-gather and all-to-all: one collective per group over the step's axes.
  void collectives(const Step& s, std::vector<Held>& next, StepReport& r) {
    const bool gather = s.kind == StepKind::all_gather;
    const auto& devices = mesh().devices;
    for (const auto& group : axis_groups(axes(), s.axes)) {
      plan::Task task;
      task.kind = plan::TaskKind::collective;
      task.op = gather ? plan::CollectiveOp::all_gather : plan::CollectiveOp::all_to_all;
      for (std::size_t i : group) task.devices.push_back(device_(devices[i]));
      // nccl-tests sizes: all-gather the gathered output, all-to-all what one rank sends.
      task.size = bytes(gather ? next[group.front()].tile : held_[group.front()].tile);
      for (std::size_t from : group)
        for (std::size_t to : group) {
          const Box piece = intersect(held_[from].tile, next[to].tile);
          if (piece.empty()) continue;
          count(devices[from], devices[to], bytes(piece), r);
          if (payload_) task.payload.push_back(region(piece, from, next[to].buffer));
        }
      add(std::move(task), group, next, group);
    }
  }

  // permute, exchange and move: each device of `to_mesh` that needs a new
  // tile (next, indexed like to_mesh) gets every piece of it (its
  // intersection with an old tile) from a holder: itself when it holds it
  // (a local copy), else one on its own host if any, else the holder that
  // has sent the fewest bytes. The sends run at once, as one NCCL group
  // would: each takes the lowest stream that neither of its devices uses
  // yet in this step.
  // A direct step sends each fresh tile's pieces from the old tiles that
  // overlap it: counted (an intersection per pair) and their memory
  // estimated before any send is made.
  void require_sends(const std::vector<Held>& next, const std::vector<bool>& fresh,
                     const std::vector<std::pair<Box, std::vector<std::size_t>>>& old) const {
    double sends = 0;
    for (std::size_t to = 0; to < next.size(); ++to)
      if (fresh[to])
        for (const auto& o : old) sends += intersect(o.first, next[to].tile).empty() ? 0 : 1;
    require_memory(
        sends * kBytesPerSend,
        fmt::format("a direct step of the redistribution over {} GPUs ({:.0f} sends)", next.size(), sends),
        "a smaller mesh, or shardings whose tiles overlap fewer others");
  }

  void direct(std::vector<Held>& next, const std::vector<bool>& fresh, const topology::DeviceMesh& to_mesh,
              StepReport& r) {
    const auto& from_devices = mesh().devices;
    std::vector<std::pair<Box, std::vector<std::size_t>>> old;  // distinct old tiles, their holders
    for (std::size_t d = 0; d < held_.size(); ++d) {
      auto it = std::find_if(old.begin(), old.end(), [&](const auto& o) { return o.first == held_[d].tile; });
      if (it == old.end())
        old.push_back({held_[d].tile, {d}});
      else
        it->second.push_back(d);
    }
    require_sends(next, fresh, old);
    std::vector<std::int64_t> sent(held_.size(), 0);
    StreamsInUse streams;
    for (std::size_t to = 0; to < next.size(); ++to) {
      if (!fresh[to]) continue;
      const NodeId dst = to_mesh.devices[to];
      for (const auto& [tile, holders] : old) {
        const Box piece = intersect(tile, next[to].tile);
        if (piece.empty()) continue;
        std::size_t from = holders.front();
        const auto key = [&](std::size_t f) {
          return std::tuple(from_devices[f] != dst, cross_host(from_devices[f], dst), sent[f], f);
        };
        for (std::size_t h : holders)
          if (key(h) < key(from)) from = h;
        const NodeId src = from_devices[from];
        plan::Task task;
        task.kind = plan::TaskKind::send;
        task.devices = {device_(src), device_(dst)};
        task.size = bytes(piece);
        sent[from] += task.size.count();
        task.stream = streams.take(src, dst);
        count(src, dst, task.size, r);
        if (payload_) task.payload.push_back(region(piece, from, next[to].buffer));
        add(std::move(task), {from}, next, {to});
      }
    }
  }

  // move: the destination mesh's devices get their tiles of s.after.
  StepReport move(const std::string& tag, const Step& s) {
    StepReport r{s, {}, {}, {}, {}};
    const auto& to_mesh = p_.dst_mesh;
    std::vector<Held> next(to_mesh.size());
    for (std::size_t j = 0; j < next.size(); ++j) {
      const Box tile = device_tile(p_.tensor.shape, s.after, p_.dst_axes, j);
      next[j] = Held{tile, tile, new_buffer(tag, to_mesh.devices[j], tile), {}};
      r.written = std::max(r.written, bytes(tile));
    }
    direct(next, std::vector<bool>(next.size(), true), to_mesh, r);
    std::map<NodeId, Bytes> held;  // a device on both meshes holds both buffers
    for (std::size_t i = 0; i < held_.size(); ++i) held[mesh().devices[i]] += bytes(held_[i].buffer_box);
    for (std::size_t j = 0; j < next.size(); ++j) held[to_mesh.devices[j]] += bytes(next[j].tile);
    for (const auto& [n, b] : held) r.peak_memory = std::max(r.peak_memory, b);
    held_ = std::move(next);
    dst_side_ = true;
    return r;
  }

  const Topology& t_;
  const Problem& p_;
  bool payload_;
  plan::Plan plan_;
  sim::PlanDevices device_;
  std::vector<Held> held_;  // per row-major device of the current mesh
  bool dst_side_ = false;   // after a move: the destination mesh
};

}  // namespace

Problem problem_on(plan::Tensor tensor, topology::DeviceMesh mesh, topology::DeviceMesh dst_mesh,
                   const ShardingSpec& src, const ShardingSpec& dst) {
  // tiles() names the dimension that does not split evenly.
  (void)tiles(tensor.shape, src, mesh.rows, mesh.cols);
  (void)tiles(tensor.shape, dst, dst_mesh.rows, dst_mesh.cols);
  Problem p;
  p.axes = Axes{mesh.rows, mesh.cols};
  p.dst_axes = Axes{dst_mesh.rows, dst_mesh.cols};
  p.src = without_unit_axes(src, p.axes);
  p.dst = without_unit_axes(dst, p.dst_axes);
  p.mesh = std::move(mesh);
  p.dst_mesh = std::move(dst_mesh);
  p.tensor = std::move(tensor);
  return p;
}

Problem make_problem(const Topology& t, plan::Tensor tensor, std::string_view src_mesh,
                     std::string_view src_spec, std::string_view dst_mesh, std::string_view dst_spec) {
  const std::size_t rank = tensor.shape.size();
  const ShardingSpec src = ShardingSpec::parse(src_spec, rank);
  const ShardingSpec dst = ShardingSpec::parse(dst_spec, rank);
  return problem_on(std::move(tensor), topology::select_mesh(t, src_mesh), topology::select_mesh(t, dst_mesh),
                    src, dst);
}

Problem make_problem(const Topology& t, plan::Tensor tensor, std::string_view mesh, std::string_view src_spec,
                     std::string_view dst_spec) {
  return make_problem(t, std::move(tensor), mesh, src_spec, mesh, dst_spec);
}

Emission emit(const Topology& t, const Problem& p, const std::vector<Step>& steps, bool payload) {
  StepEmitter e(t, p, payload);
  Emission out;
  const Bytes src_shard = plan::box_bytes(p.tensor, device_tile(p.tensor.shape, p.src, p.axes, 0));
  const Bytes dst_shard = plan::box_bytes(p.tensor, device_tile(p.tensor.shape, p.dst, p.dst_axes, 0));
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

}  // namespace meshsim::reshard::redistribute
