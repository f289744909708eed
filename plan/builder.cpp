#include "plan/builder.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::plan {

void add_sum_payload(Plan& plan, Task& task, const std::string& tensor, DType dtype, std::int64_t elements) {
  MESHSIM_ASSERT(task.kind == TaskKind::collective && task.op == CollectiveOp::all_reduce,
                 "sum payloads are all-reduce payloads");
  const auto n = static_cast<int>(task.devices.size());
  if (n > kMaxParts)
    throw UsageError(fmt::format("a sum payload adds at most {} parts; all-reduce \"{}\" has {} members",
                                 kMaxParts, task.id, n));
  const Box box{{0, elements}};
  const std::size_t ti = plan.tensors.size();
  plan.tensors.push_back({tensor, {elements}, dtype, n});
  const Bytes size(elements * dtype_size(dtype));
  const std::size_t first = plan.buffers.size();  // member k: part at first + 2k, sum at first + 2k + 1
  for (int k = 0; k < n; ++k) {
    const std::size_t dev = task.devices[static_cast<std::size_t>(k)];
    plan.buffers.push_back({fmt::format("{}/part{}", tensor, k), dev, size, ti, box, k});
    plan.buffers.push_back({fmt::format("{}/sum{}", tensor, k), dev, size, ti, box});
  }
  const auto at = [&](int k) { return first + 2 * static_cast<std::size_t>(k); };
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j) task.payload.push_back({ti, box, at(j), Bytes(0), at(k) + 1, Bytes(0), true});
}

void add_sharded_payload(Plan& plan, Task& task, const std::string& tensor, DType dtype,
                         std::int64_t elements) {
  const bool reduce = task.op == CollectiveOp::reduce_scatter;
  MESHSIM_ASSERT(task.kind == TaskKind::collective && (reduce || task.op == CollectiveOp::all_gather),
                 "sharded payloads are reduce-scatter and all-gather payloads");
  const auto n = static_cast<int>(task.devices.size());
  if (reduce && n > kMaxParts)
    throw UsageError(fmt::format("a sum payload adds at most {} parts; reduce-scatter \"{}\" has {} members",
                                 kMaxParts, task.id, n));
  const std::int64_t shard = std::max<std::int64_t>(1, (elements + n - 1) / n);
  const Box whole{{0, shard * n}};
  auto shard_box = [&](int k) { return Box{{k * shard, (k + 1) * shard}}; };
  const std::int64_t e = dtype_size(dtype);
  const std::size_t ti = plan.tensors.size();
  plan.tensors.push_back({tensor, {shard * n}, dtype, reduce ? n : 1});
  const std::size_t first = plan.buffers.size();  // member k: input at first + 2k, output at first + 2k + 1
  for (int k = 0; k < n; ++k) {
    const std::size_t dev = task.devices[static_cast<std::size_t>(k)];
    if (reduce) {
      plan.buffers.push_back({fmt::format("{}/part{}", tensor, k), dev, Bytes(shard * n * e), ti, whole, k});
      plan.buffers.push_back({fmt::format("{}/shard{}", tensor, k), dev, Bytes(shard * e), ti, shard_box(k)});
    } else {
      plan.buffers.push_back({fmt::format("{}/shard{}", tensor, k), dev, Bytes(shard * e), ti, shard_box(k)});
      plan.buffers.push_back({fmt::format("{}/whole{}", tensor, k), dev, Bytes(shard * n * e), ti, whole});
    }
  }
  // Boxes find their place in a buffer by its declared box: no offsets.
  const auto in = [&](int k) { return first + 2 * static_cast<std::size_t>(k); };
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j) {
      if (reduce)  // member k's shard adds member j's part of it
        task.payload.push_back({ti, shard_box(k), in(j), Bytes(0), in(k) + 1, Bytes(0), true});
      else  // member k's shard lands in member j's whole (its own too: NCCL's output holds every shard)
        task.payload.push_back({ti, shard_box(k), in(k), Bytes(0), in(j) + 1, Bytes(0), false});
    }
}

void add_all_to_all_payload(Plan& plan, Task& task, const std::string& tensor, DType dtype,
                            std::int64_t elements) {
  MESHSIM_ASSERT(task.kind == TaskKind::collective && task.op == CollectiveOp::all_to_all,
                 "all-to-all payloads are for all-to-alls");
  const auto n = static_cast<std::int64_t>(task.devices.size());
  const std::int64_t block = std::max<std::int64_t>(1, (elements + n - 1) / n);
  const std::int64_t e = dtype_size(dtype);
  const std::size_t ti = plan.tensors.size();
  plan.tensors.push_back({tensor, {n, n * block}, dtype});
  const std::size_t first = plan.buffers.size();  // member k: send at first + 2k, receive at first + 2k + 1
  for (std::int64_t k = 0; k < n; ++k) {
    const std::size_t dev = task.devices[static_cast<std::size_t>(k)];
    plan.buffers.push_back({fmt::format("{}/send{}", tensor, k), dev, Bytes(n * block * e), ti,
                            Box{{k, k + 1}, {0, n * block}}});
    plan.buffers.push_back({fmt::format("{}/recv{}", tensor, k), dev, Bytes(n * block * e), ti,
                            Box{{0, n}, {k * block, (k + 1) * block}}});
  }
  const auto at = [&](std::int64_t k) { return first + 2 * static_cast<std::size_t>(k); };
  for (std::int64_t k = 0; k < n; ++k)
    for (std::int64_t j = 0; j < n; ++j)
      task.payload.push_back(
          {ti, Box{{k, k + 1}, {j * block, (j + 1) * block}}, at(k), Bytes(0), at(j) + 1, Bytes(0), false});
}

Stamp stamp_names(Plan& plan, const Plan& fragment, const std::string& prefix, Stamp s) {
  s.tensors = plan.tensors.size();
  s.buffers = plan.buffers.size();
  for (Tensor t : fragment.tensors) {
    t.name = prefix + "/" + t.name;
    plan.tensors.push_back(std::move(t));
  }
  for (Buffer b : fragment.buffers) {
    b.name = prefix + "/" + b.name;
    b.device = s.devices.at(b.device);
    if (b.tensor) *b.tensor += s.tensors;
    plan.buffers.push_back(std::move(b));
  }
  return s;
}

void stamp_task(Task& t, const Stamp& s) {
  MESHSIM_ASSERT(!t.kernels, "a fragment's tasks name no kernel set (a stamp does not carry them)");
  for (auto& d : t.devices) d = s.devices.at(d);
  for (auto& r : t.payload) r = stamped(std::move(r), s);
}

Region stamped(Region r, const Stamp& s) {
  r.tensor += s.tensors;
  r.src_buffer += s.buffers;
  r.dst_buffer += s.buffers;
  return r;
}

}  // namespace meshsim::plan
