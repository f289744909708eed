#include "runtime/layout.h"

#include <bit>
#include <cstring>

#include "core/error.h"
#include "core/hash.h"
#include "runtime/values.h"

namespace meshsim::runtime {

namespace {

using Box = std::vector<std::pair<std::int64_t, std::int64_t>>;

// Byte strides of a row-major array with these extents, element size e.
std::vector<std::int64_t> strides(const std::vector<std::int64_t>& extents, std::int64_t e) {
  std::vector<std::int64_t> s(extents.size());
  std::int64_t acc = e;
  for (std::size_t d = extents.size(); d-- > 0;) {
    s[d] = acc;
    acc *= extents[d];
  }
  return s;
}

std::vector<std::int64_t> extents(const Box& b) {
  std::vector<std::int64_t> x;
  x.reserve(b.size());
  for (const auto& [lo, hi] : b) x.push_back(hi - lo);
  return x;
}

// Offset of the region's first element, and the byte stride per region
// dimension, in buffer `buf`.
std::pair<std::int64_t, std::vector<std::int64_t>> placement(const plan::Region& r, const plan::Buffer& buf,
                                                             Bytes offset, std::int64_t e) {
  if (buf.box.empty()) return {offset.count(), strides(extents(r.box), e)};
  auto s = strides(extents(buf.box), e);
  std::int64_t base = 0;
  for (std::size_t d = 0; d < s.size(); ++d) base += (r.box[d].first - buf.box[d].first) * s[d];
  return {base, std::move(s)};
}

}  // namespace

std::int64_t StridedCopy::rows() const {
  std::int64_t n = 1;
  for (const Dim& d : outer) n *= d.count;
  return n;
}

StridedCopy copy_of(const plan::Tensor& t, const plan::Region& r, const plan::Buffer& src,
                    const plan::Buffer& dst) {
  MESHSIM_ASSERT(r.box.size() == t.shape.size(), "region rank differs from its tensor's");
  const std::int64_t e = plan::dtype_size(t.dtype);
  const auto [sbase, sstr] = placement(r, src, r.src_offset, e);
  const auto [dbase, dstr] = placement(r, dst, r.dst_offset, e);
  StridedCopy c;
  c.src_offset = sbase;
  c.dst_offset = dbase;
  // Walk the dimensions inside out, growing the contiguous run while both
  // sides stay contiguous, then collecting the outer dimensions.
  c.row_bytes = e;
  std::vector<StridedCopy::Dim> rev;  // innermost first
  bool in_run = true;
  for (std::size_t d = r.box.size(); d-- > 0;) {
    const std::int64_t n = r.box[d].second - r.box[d].first;
    if (n == 0) {
      c.row_bytes = 0;
      c.outer.clear();
      return c;
    }
    if (n == 1) continue;
    if (in_run && sstr[d] == c.row_bytes && dstr[d] == c.row_bytes) {
      c.row_bytes *= n;
      continue;
    }
    in_run = false;
    if (!rev.empty() && sstr[d] == rev.back().src_stride * rev.back().count &&
        dstr[d] == rev.back().dst_stride * rev.back().count) {
      // Contiguous over the inner outer-dimension on both sides: merge.
      rev.back().count *= n;
      continue;
    }
    rev.push_back({n, sstr[d], dstr[d]});
  }
  c.outer.assign(rev.rbegin(), rev.rend());
  return c;
}

std::int64_t offset_in_box(const plan::Tensor& t, const Box& box, std::int64_t g) {
  const std::size_t rank = t.shape.size();
  std::int64_t pos = 0;
  std::int64_t scale = 1;
  for (std::size_t d = rank; d-- > 0;) {
    const std::int64_t c = g % t.shape[d];
    g /= t.shape[d];
    pos += (c - box[d].first) * scale;
    scale *= box[d].second - box[d].first;
  }
  return pos * plan::dtype_size(t.dtype);
}

StridedCopy pack_copy(const plan::Tensor& t, const plan::Region& r, const plan::Buffer& src) {
  plan::Region packed = r;
  packed.dst_offset = Bytes(0);
  return copy_of(t, packed, src, plan::Buffer{"staging", src.device, Bytes(0), {}, {}});
}
StridedCopy unpack_copy(const plan::Tensor& t, const plan::Region& r, const plan::Buffer& dst) {
  plan::Region packed = r;
  packed.src_offset = Bytes(0);
  return copy_of(t, packed, plan::Buffer{"staging", dst.device, Bytes(0), {}, {}}, dst);
}

namespace {

// Sets one side of `c` (source or destination) to packed: offset 0 and
// row-major strides over the copy's shape.
template <typename Side>
StridedCopy packed(StridedCopy c, Side side) {
  std::int64_t stride = c.row_bytes;
  for (std::size_t k = c.outer.size(); k-- > 0;) {
    side(c.outer[k]) = stride;
    stride *= c.outer[k].count;
  }
  return c;
}

}  // namespace

StridedCopy with_packed_destination(StridedCopy c) {
  c.dst_offset = 0;
  return packed(std::move(c), [](StridedCopy::Dim& d) -> std::int64_t& { return d.dst_stride; });
}

StridedCopy with_packed_source(StridedCopy c) {
  c.src_offset = 0;
  return packed(std::move(c), [](StridedCopy::Dim& d) -> std::int64_t& { return d.src_stride; });
}

void pattern(std::size_t tensor_index, std::int64_t g, std::span<std::byte> out) {
  const std::uint64_t v = splitmix64((static_cast<std::uint64_t>(g) << 16U) + tensor_index);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::byte>((v >> (8U * (i % 8U))) & 0xFFU);
}

static_assert(std::endian::native == std::endian::little, "fill_pattern copies the low bytes of a word");

void fill_pattern(std::size_t tensor_index, std::int64_t g0, std::int64_t e, std::span<std::byte> out) {
  const auto es = static_cast<std::size_t>(e);
  const std::size_t n = out.size() / es;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t v =
        splitmix64((static_cast<std::uint64_t>(g0 + static_cast<std::int64_t>(k)) << 16U) + tensor_index);
    if (es <= 8) {
      std::memcpy(out.data() + k * es, &v, es);  // little-endian: the low bytes, as pattern() writes them
    } else {
      pattern(tensor_index, g0 + static_cast<std::int64_t>(k), out.subspan(k * es, es));
    }
  }
}

void fill_contents(const plan::Tensor& t, std::size_t tensor_index, int part, std::int64_t g0,
                   std::span<std::byte> out) {
  const std::int64_t e = plan::dtype_size(t.dtype);
  if (t.parts <= 1) {
    fill_pattern(tensor_index, g0, e, out);
    return;
  }
  const auto es = static_cast<std::size_t>(e);
  for (std::size_t k = 0; k < out.size() / es; ++k)
    encode_value(t.dtype, test_value(t, tensor_index, part, g0 + static_cast<std::int64_t>(k)),
                 out.subspan(k * es, es));
}

std::vector<bool> written_buffers(const plan::Plan& plan) {
  std::vector<bool> written(plan.buffers.size(), false);
  for (const auto& task : plan.tasks)
    for (const auto& r : task.payload) written[r.dst_buffer] = true;
  return written;
}

std::vector<std::vector<std::byte>> initial_images(const plan::Plan& plan) {
  const auto written = written_buffers(plan);

  std::vector<std::vector<std::byte>> img(plan.buffers.size());
  for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
    const auto& buf = plan.buffers[b];
    // Part buffers are never written (the plan loader sees to it).
    img[b].assign(static_cast<std::size_t>(buf.size.count()), written[b] ? kPoison : std::byte{0});
    if (written[b] || !buf.tensor) continue;
    const std::size_t ti = *buf.tensor;
    const plan::Tensor& t = plan.tensors[ti];
    const auto e = static_cast<std::size_t>(plan::dtype_size(t.dtype));
    for_each_box_row(buf.box, t.shape, [&](std::int64_t g, std::int64_t pos, std::int64_t len) {
      fill_contents(
          t, ti, buf.part, g,
          std::span(img[b]).subspan(static_cast<std::size_t>(pos) * e, static_cast<std::size_t>(len) * e));
    });
  }
  // Unboxed sources hold, at each region that reads them, that region's elements.
  for (const auto& task : plan.tasks)
    for (const auto& r : task.payload) {
      const std::size_t sb = r.src_buffer;
      if (written[sb] || plan.buffers[sb].tensor) continue;
      const std::size_t ti = r.tensor;
      const plan::Tensor& t = plan.tensors[ti];
      const auto e = static_cast<std::size_t>(plan::dtype_size(t.dtype));
      const auto base = static_cast<std::size_t>(r.src_offset.count());
      for_each_box_row(r.box, t.shape, [&](std::int64_t g, std::int64_t pos, std::int64_t len) {
        fill_contents(t, ti, -1, g,
                      std::span(img[sb]).subspan(base + static_cast<std::size_t>(pos) * e,
                                                 static_cast<std::size_t>(len) * e));
      });
    }
  return img;
}

}  // namespace meshsim::runtime
