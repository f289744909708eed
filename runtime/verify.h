#pragma once
// Byte verification of a run: after a plan has run, every destination holds
// exactly the pattern (layout.h) of the global elements it stands for.
//
//   - a buffer that declares a box and is written by some region: every
//     element of its box (an element no region writes is an error too);
//   - a written buffer without a box: every element of every region that
//     writes it, at the region's offset.
// A mismatch names the buffer, its device, the task whose region should
// have written the element (the last one in plan order whose box holds it;
// none if no region does), the first bad global index (and its coordinates),
// and the expected and actual bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace meshsim::runtime {

struct Mismatch {
  std::string buffer;
  std::string device;
  std::string tensor;
  std::string task;  // empty: no region writes this element
  std::int64_t index = 0;
  std::vector<std::int64_t> coords;
  std::string expected;  // bytes in memory order, hex ("0x1f 0xa0 ...")
  std::string actual;
  std::int64_t bad_in_buffer = 0;  // how many elements of this buffer are wrong

  [[nodiscard]] std::string describe() const;
};

struct Verification {
  bool ok = true;
  std::size_t buffers_checked = 0;
  std::int64_t elements_checked = 0;
  std::int64_t bad_elements = 0;
  std::vector<Mismatch> mismatches;  // the first bad element of each bad buffer, at most 16
};

/// Checks `images` (one byte image per plan buffer, as read back after a run).
[[nodiscard]] Verification verify_images(const plan::Plan& plan,
                                         const std::vector<std::vector<std::byte>>& images);

}  // namespace meshsim::runtime
