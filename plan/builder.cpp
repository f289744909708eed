#include "plan/builder.h"

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
