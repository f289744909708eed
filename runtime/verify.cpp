#include "runtime/verify.h"

#include <array>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "core/error.h"
#include "runtime/layout.h"

namespace meshsim::runtime {

namespace {

using Box = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::string hex(std::span<const std::byte> b) {
  std::string s;
  for (std::size_t i = 0; i < b.size(); ++i)
    s += fmt::format("{}{:02x}", i == 0 ? "0x" : " ", static_cast<unsigned>(b[i]));
  return s;
}

std::vector<std::int64_t> coords_of(const std::vector<std::int64_t>& shape, std::int64_t g) {
  std::vector<std::int64_t> c(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    c[d] = g % shape[d];
    g /= shape[d];
  }
  return c;
}

bool contains(const Box& box, const std::vector<std::int64_t>& c) {
  for (std::size_t d = 0; d < box.size(); ++d)
    if (c[d] < box[d].first || c[d] >= box[d].second) return false;
  return true;
}

}  // namespace

std::string Mismatch::describe() const {
  std::string where;
  for (std::size_t d = 0; d < coords.size(); ++d) where += fmt::format("{}{}", d == 0 ? "" : ",", coords[d]);
  return fmt::format(
      "{}: buffer \"{}\" on {}: element {} [{}] of \"{}\" expected {} got {}{}",
      task.empty() ? std::string("no task writes it") : fmt::format("task \"{}\"", task), buffer, device,
      index, where, tensor, expected, actual,
      bad_in_buffer > 1 ? fmt::format(" ({} bad elements in this buffer)", bad_in_buffer) : "");
}

Verification verify_images(const plan::Plan& plan, const std::vector<std::vector<std::byte>>& images) {
  MESHSIM_ASSERT(images.size() == plan.buffers.size(), "one image per buffer");
  // Regions writing each buffer, in plan order: (task, region).
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> writers(plan.buffers.size());
  for (std::size_t i = 0; i < plan.tasks.size(); ++i)
    for (std::size_t k = 0; k < plan.tasks[i].payload.size(); ++k)
      writers[plan.tasks[i].payload[k].dst_buffer].emplace_back(i, k);

  Verification v;
  std::array<std::byte, 16> want{};
  std::vector<std::byte> row;
  for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
    if (writers[b].empty()) continue;
    const auto& buf = plan.buffers[b];
    const auto& img = images[b];
    MESHSIM_ASSERT(img.size() == static_cast<std::size_t>(buf.size.count()),
                   "image size differs from buffer");
    ++v.buffers_checked;
    std::int64_t bad = 0;
    Mismatch first;
    auto check = [&](std::size_t ti, std::int64_t g, std::int64_t byte_offset) {
      const plan::Tensor& t = plan.tensors[ti];
      const auto e = static_cast<std::size_t>(plan::dtype_size(t.dtype));
      fill_contents(t, ti, -1, g, std::span(want).first(e));
      ++v.elements_checked;
      const auto got = std::span(img).subspan(static_cast<std::size_t>(byte_offset), e);
      if (std::memcmp(got.data(), want.data(), e) == 0) return;
      if (bad++ > 0) return;
      first.buffer = buf.name;
      first.device = plan.devices[buf.device];
      first.tensor = t.name;
      first.index = g;
      first.coords = coords_of(t.shape, g);
      first.expected = hex(std::span(want).first(e));
      first.actual = hex(got);
      for (auto it = writers[b].rbegin(); it != writers[b].rend(); ++it) {
        const auto& r = plan.tasks[it->first].payload[it->second];
        if (r.tensor == ti && contains(r.box, first.coords)) {
          first.task = plan.tasks[it->first].id;
          break;
        }
      }
    };
    // Row by row: one memcmp against the expected row; element by element
    // only where a row differs.
    auto check_row = [&](std::size_t ti, std::int64_t g0, std::int64_t byte_offset, std::int64_t len) {
      const std::int64_t e = plan::dtype_size(plan.tensors[ti].dtype);
      row.resize(static_cast<std::size_t>(len * e));
      fill_contents(plan.tensors[ti], ti, -1, g0, row);
      if (std::memcmp(img.data() + byte_offset, row.data(), row.size()) == 0) {
        v.elements_checked += len;
        return;
      }
      for (std::int64_t k = 0; k < len; ++k) check(ti, g0 + k, byte_offset + k * e);
    };
    if (buf.tensor) {
      const std::size_t ti = *buf.tensor;
      const auto e = plan::dtype_size(plan.tensors[ti].dtype);
      for_each_box_row(
          buf.box, plan.tensors[ti].shape,
          [&](std::int64_t g, std::int64_t pos, std::int64_t len) { check_row(ti, g, pos * e, len); });
    } else {
      for (const auto& [task, k] : writers[b]) {
        const auto& r = plan.tasks[task].payload[k];
        const std::size_t ti = r.tensor;
        const auto e = plan::dtype_size(plan.tensors[ti].dtype);
        const auto base = r.dst_offset.count();
        for_each_box_row(r.box, plan.tensors[ti].shape,
                         [&](std::int64_t g, std::int64_t pos, std::int64_t len) {
                           check_row(ti, g, base + pos * e, len);
                         });
      }
    }
    if (bad > 0) {
      v.ok = false;
      v.bad_elements += bad;
      first.bad_in_buffer = bad;
      if (v.mismatches.size() < 16) v.mismatches.push_back(std::move(first));
    }
  }
  return v;
}

}  // namespace meshsim::runtime
