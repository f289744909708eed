#pragma once
// Where a plan's bytes live, for the backends that move real memory.
//
// Buffer layout. A buffer is `size` bytes on its device. A buffer that
// declares a box of a tensor holds that box row-major; element c (global
// coordinates) sits at byte
//     e · rowmajor(c − box.lo; extents of the box)            (e = element size)
// A buffer without a box holds each region contiguously (row-major over
// the region's box) from the region's byte offset.
//
// A region therefore reads and writes two strided byte patterns of the same
// shape. `copy_of` reduces them to a StridedCopy: a contiguous run of
// `row_bytes`, repeated over up to rank−1 outer dimensions with their own
// source and destination strides. Dimensions of extent 1 are dropped and a
// dimension is merged into the one inside it when both sides are contiguous
// across it, so a region that is contiguous on both sides is one run (one
// memcpy), a tile of a 2-D box is one 2-D copy, and so on. The innermost
// stride is always the element size, so row_bytes ≥ e.
//
// Contents. Element g (global row-major index) of tensor t holds
//     pattern(t, g) = the low e bytes of splitmix64(g · 2^16 + t)
// where t is the tensor's position in the plan: a deterministic function of
// the global index that differs between neighbours, between tensors and
// between byte orders, so a misplaced, shifted or missing element shows.
// Tensors of parts hold small integers instead (values.h): a part buffer its
// contribution, every other place the whole sum. Destinations start as
// kPoison bytes.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "plan/plan.h"

namespace meshsim::runtime {

inline constexpr std::byte kPoison{0xA5};

struct StridedCopy {
  std::int64_t src_offset = 0;  // bytes, of the first element in the source buffer
  std::int64_t dst_offset = 0;
  std::int64_t row_bytes = 0;  // contiguous run
  struct Dim {
    std::int64_t count = 1;
    std::int64_t src_stride = 0;  // bytes between consecutive runs along this dimension
    std::int64_t dst_stride = 0;
  };
  std::vector<Dim> outer;  // outermost first; empty: a single run

  [[nodiscard]] std::int64_t rows() const;
  [[nodiscard]] std::int64_t bytes() const { return rows() * row_bytes; }
  /// Calls f(src_offset, dst_offset) for every run, in row-major order.
  template <typename F>
  void for_each_row(F&& f) const;
};

/// The copy that moves region `r` (of tensor `t`) from buffer `src` to buffer `dst`.
[[nodiscard]] StridedCopy copy_of(const plan::Tensor& t, const plan::Region& r, const plan::Buffer& src,
                                  const plan::Buffer& dst);

/// A region's bytes seen from one side, packed contiguously from offset 0:
/// the copy from its source buffer into a packed staging area, and from
/// such an area into its destination buffer (around NCCL sends).
[[nodiscard]] StridedCopy pack_copy(const plan::Tensor& t, const plan::Region& r, const plan::Buffer& src);
[[nodiscard]] StridedCopy unpack_copy(const plan::Tensor& t, const plan::Region& r, const plan::Buffer& dst);

/// `c` with one side packed: its runs laid out one after another from
/// offset 0 (row-major over its shape), the other side as in `c`. A copy of
/// a region to a staging area and back: copy(with_packed_destination(c))
/// then copy(with_packed_source(c)) moves what c moves.
[[nodiscard]] StridedCopy with_packed_destination(StridedCopy c);
[[nodiscard]] StridedCopy with_packed_source(StridedCopy c);

/// Byte offset of global element `g` of `t` inside a buffer that declares a box
/// containing it.
[[nodiscard]] std::int64_t offset_in_box(const plan::Tensor& t,
                                         const std::vector<std::pair<std::int64_t, std::int64_t>>& box,
                                         std::int64_t g);

/// Writes pattern(tensor_index, g) (dtype_size(t.dtype) bytes) to `out`.
void pattern(std::size_t tensor_index, std::int64_t g, std::span<std::byte> out);
/// Writes the patterns of elements g0, g0+1, ... (out.size() / e of them).
void fill_pattern(std::size_t tensor_index, std::int64_t g0, std::int64_t e, std::span<std::byte> out);
/// What elements g0, g0+1, ... of `t` hold: part `part` of a tensor of parts
/// (values.h), the whole (part < 0, or a tensor without parts: the pattern).
void fill_contents(const plan::Tensor& t, std::size_t tensor_index, int part, std::int64_t g0,
                   std::span<std::byte> out);

/// The rows of a box (runs along its last dimension): f(g_first, position_first, count),
/// row-major; position counts elements in row-major box order.
template <typename F>
void for_each_box_row(const std::vector<std::pair<std::int64_t, std::int64_t>>& box,
                      const std::vector<std::int64_t>& shape, F&& f);

/// The initial contents of every plan buffer: buffers that some region reads
/// and none writes hold their elements' patterns (boxed buffers over their
/// box; others at each reading region's bytes); written buffers hold kPoison.
[[nodiscard]] std::vector<std::vector<std::byte>> initial_images(const plan::Plan& plan);

/// Per plan buffer: whether some region writes it (a destination).
[[nodiscard]] std::vector<bool> written_buffers(const plan::Plan& plan);

// ---- implementation of the templates ----

template <typename F>
void StridedCopy::for_each_row(F&& f) const {
  const std::size_t n = outer.size();
  std::vector<std::int64_t> idx(n, 0);
  std::int64_t s = src_offset;
  std::int64_t d = dst_offset;
  const std::int64_t total = rows();
  for (std::int64_t row = 0; row < total; ++row) {
    f(s, d);
    for (std::size_t k = n; k-- > 0;) {
      s += outer[k].src_stride;
      d += outer[k].dst_stride;
      if (++idx[k] < outer[k].count) break;
      s -= outer[k].src_stride * outer[k].count;
      d -= outer[k].dst_stride * outer[k].count;
      idx[k] = 0;
    }
  }
}

template <typename F>
void for_each_box_row(const std::vector<std::pair<std::int64_t, std::int64_t>>& box,
                      const std::vector<std::int64_t>& shape, F&& f) {
  const std::size_t rank = box.size();
  if (rank == 0) return;
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) rows *= box[d].second - box[d].first;
  const std::int64_t len = box[rank - 1].second - box[rank - 1].first;
  if (rows <= 0 || len <= 0) return;
  std::vector<std::int64_t> idx(rank);
  for (std::size_t d = 0; d < rank; ++d) idx[d] = box[d].first;
  for (std::int64_t row = 0; row < rows; ++row) {
    std::int64_t g = 0;
    for (std::size_t d = 0; d < rank; ++d) g = g * shape[d] + idx[d];
    f(g, row * len, len);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < box[d].second) break;
      idx[d] = box[d].first;
    }
  }
}

}  // namespace meshsim::runtime
