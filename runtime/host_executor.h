#pragma once
// The host backend: executes the data movement of a Plan on host arrays and
// verifies it, the check the GPU backends repeat on real memory.
//
// Every buffer becomes an array of elements. Each element carries the
// global row-major index it stands for. Buffers that no region writes are
// sources and start holding the right indices; buffers that some region
// writes are destinations and start poisoned (-1). Tasks run in an order
// that respects their dependencies and their streams; each payload region
// copies its box from its source buffer to its destination buffer (at the
// box's place in a buffer that declares a box, else contiguously at the
// region's offset). Afterwards every element of every destination buffer
// that declares a box must hold its own global index.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/plan.h"

namespace meshsim::runtime {

struct HostCheck {
  bool ok = true;
  std::int64_t elements_checked = 0;
  std::size_t buffers_checked = 0;
  std::int64_t elements_copied = 0;
  std::vector<std::string> errors;  // the first few mismatches, readable
};

/// Runs the plan's payload regions on host memory and checks the result.
/// InternalError if a region names a buffer or tensor the plan lacks (the
/// plan loader rejects such plans first).
[[nodiscard]] HostCheck execute_on_host(const sim::Plan& plan);

}  // namespace meshsim::runtime
