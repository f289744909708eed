#pragma once
// What each plan task asks of a memory-moving backend (host, cuda): the
// lowering both share, so they move the same bytes.
//
//   - every payload region is a strided copy between two plan buffers
//     (layout.h), in payload order, except sum regions: those that write the
//     same box of one buffer form a Reduction;
//   - a data-moving task without a payload still moves its volume, between
//     per-device scratch areas, so that it takes time: send `size` bytes
//     src → dst; broadcast `size` bytes over each hop of its chain; a ring
//     collective its textbook volume over each ring edge (all_reduce
//     2(n−1)/n·S, all_gather and reduce_scatter (n−1)/n·S); a direct
//     collective or all_to_all S/n per ordered pair (all_reduce 2S/n);
//   - a compute task is compute: the backend runs it (cuda: a GEMM of its
//     FLOPs or a timed kernel) or stands in for it (host: waits).
// Scratch copies are split into pieces of at most the device's scratch size.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "runtime/layout.h"

namespace meshsim::runtime {

struct BufferCopy {
  std::size_t src_buffer = 0;
  std::size_t dst_buffer = 0;
  StridedCopy copy;
};

struct ScratchCopy {
  std::size_t src_device = 0;  // index into PlanWork::devices
  std::size_t dst_device = 0;
  std::int64_t bytes = 0;
};

/// Sum regions of one task that write the same box of one buffer: the
/// destination gets the element-wise sum of the sources (all their copies
/// have the same destination offsets).
struct Reduction {
  plan::DType dtype = plan::DType::f32;
  std::size_t dst_buffer = 0;
  std::vector<BufferCopy> sources;
};

struct TaskWork {
  std::vector<BufferCopy> copies;
  std::vector<Reduction> reductions;
  std::vector<ScratchCopy> scratch;
  bool compute = false;
};

struct PlanWork {
  std::vector<std::string> devices;         // Plan::devices: backends number devices as the plan does
  std::vector<std::size_t> buffer_device;   // per plan buffer: index into devices
  std::vector<std::int64_t> scratch_bytes;  // per device: the scratch area it needs (0: none)
  std::vector<TaskWork> tasks;              // per plan task
  std::int64_t payload_bytes = 0;           // sum of all buffer copies
  std::int64_t scratch_moved = 0;           // sum of all scratch copies
};

[[nodiscard]] PlanWork lower(const plan::Plan& plan);

/// Sum of the plan's buffer sizes (saturating at the int64 maximum).
[[nodiscard]] std::int64_t buffer_bytes(const plan::Plan& plan);

}  // namespace meshsim::runtime
