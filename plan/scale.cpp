#include "plan/scale.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"

namespace meshsim::plan {

namespace {

class Scaler {
 public:
  Scaler(const Plan& p, int n, const std::string& file) : n_(n), file_(file), axis_(p.tensors.size()) {
    for (std::size_t t = 0; t < p.tensors.size(); ++t) {
      const auto& shape = p.tensors[t].shape;
      if (shape.empty()) continue;
      axis_[t] = static_cast<std::size_t>(std::max_element(shape.begin(), shape.end()) - shape.begin());
    }
  }

  // Divides tensor t's extent along its axis.
  void shrink(Tensor& t, std::size_t index) const {
    if (t.shape.empty()) return;
    std::int64_t& e = t.shape[axis_[index]];
    e = exact(e, fmt::format("tensor \"{}\"'s longest dimension ({} elements)", t.name, e));
  }

  // Divides a box of tensor `index` along its axis.
  void shrink(Box& box, std::size_t index, const Plan& p, std::string_view owner) const {
    if (box.empty()) return;
    auto& [lo, hi] = box[axis_[index]];
    const std::string what = fmt::format("{}'s box of tensor \"{}\" ([{}, {}) along its longest dimension)",
                                         owner, p.tensors[index].name, lo, hi);
    lo = exact(lo, what);
    hi = exact(hi, what);
  }

  // Divides a region's offset in a buffer without a box (in one with a
  // box, the region's place comes from its box).
  void shrink_offset(Bytes& offset, const Buffer& b, std::string_view owner) const {
    if (b.tensor) return;
    offset = Bytes(exact(
        offset.count(), fmt::format("{}'s offset {} in buffer \"{}\"", owner, exact_string(offset), b.name)));
  }

  [[nodiscard]] Bytes rounded_up(Bytes b) const { return Bytes((b.count() + n_ - 1) / n_); }

 private:
  [[nodiscard]] std::int64_t exact(std::int64_t v, std::string_view what) const {
    if (v % n_ != 0)
      throw UsageError(fmt::format("{}: --scale {}: {} is not a multiple of {}", file_, n_, what, n_));
    return v / n_;
  }

  std::int64_t n_;
  const std::string& file_;
  std::vector<std::size_t> axis_;  // per tensor: the dimension that shrinks
};

}  // namespace

LoadedPlan scaled_plan(const Plan& p, int n, const std::string& file) {
  if (n < 1) throw UsageError(fmt::format("--scale must be at least 1, got {}", n));
  const Scaler s(p, n, file);
  Plan out = p;
  for (std::size_t b = 0; b < out.buffers.size(); ++b) {
    Buffer& buf = out.buffers[b];
    if (buf.tensor) s.shrink(buf.box, *buf.tensor, p, fmt::format("buffer \"{}\"", buf.name));
    buf.size = s.rounded_up(buf.size);
  }
  for (Task& t : out.tasks) {
    if (t.kind != TaskKind::compute) t.size = s.rounded_up(t.size);
    const std::string owner = fmt::format("task \"{}\"", t.id);
    for (Region& r : t.payload) {
      s.shrink(r.box, r.tensor, p, owner);
      s.shrink_offset(r.src_offset, out.buffers[r.src_buffer], owner);
      s.shrink_offset(r.dst_offset, out.buffers[r.dst_buffer], owner);
    }
  }
  for (std::size_t t = 0; t < out.tensors.size(); ++t) s.shrink(out.tensors[t], t);
  return read_plan(plan_to_json(out), fmt::format("{} (--scale {})", file, n));
}

}  // namespace meshsim::plan
