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
  const std::vector<std::pair<std::int64_t, std::int64_t>> box{{0, elements}};
  plan.tensors.push_back({tensor, {elements}, dtype, n});
  const Bytes size(elements * dtype_size(dtype));
  for (int k = 0; k < n; ++k) {
    const std::string& dev = task.devices[static_cast<std::size_t>(k)];
    plan.buffers.push_back({fmt::format("{}/part{}", tensor, k), dev, size, tensor, box, k});
    plan.buffers.push_back({fmt::format("{}/sum{}", tensor, k), dev, size, tensor, box});
  }
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      task.payload.push_back({tensor, box, fmt::format("{}/part{}", tensor, j), Bytes(0),
                              fmt::format("{}/sum{}", tensor, k), Bytes(0), true});
}

void stamp_names(Plan& plan, const Plan& fragment, const std::string& prefix) {
  for (Tensor t : fragment.tensors) {
    t.name = prefix + "/" + t.name;
    plan.tensors.push_back(std::move(t));
  }
  for (Buffer b : fragment.buffers) {
    b.name = prefix + "/" + b.name;
    if (!b.tensor.empty()) b.tensor = prefix + "/" + b.tensor;
    plan.buffers.push_back(std::move(b));
  }
}

Region stamped(Region r, const std::string& prefix) {
  r.tensor = prefix + "/" + r.tensor;
  r.src_buffer = prefix + "/" + r.src_buffer;
  r.dst_buffer = prefix + "/" + r.dst_buffer;
  return r;
}

}  // namespace meshsim::plan
