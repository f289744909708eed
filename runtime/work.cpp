#include "runtime/work.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/unit_strings.h"

namespace meshsim::runtime {

namespace {

constexpr std::int64_t kMaxStandIn = std::int64_t{1} << 50;  // 1 PiB

// Adds `bytes` from a to b, in pieces that fit both scratch areas.
void scratch_copy(TaskWork& w, std::size_t a, std::size_t b, std::int64_t bytes, std::int64_t piece) {
  if (a == b || bytes <= 0) return;
  for (std::int64_t left = bytes; left > 0; left -= piece) w.scratch.push_back({a, b, std::min(left, piece)});
}

}  // namespace

PlanWork lower(const plan::Plan& plan) {
  plan::check_indices(plan);
  PlanWork pw;
  pw.devices = plan.devices;
  for (const auto& b : plan.buffers) pw.buffer_device.push_back(b.device);
  pw.scratch_bytes.assign(pw.devices.size(), 0);
  // Scratch areas: each device gets the largest payload-less size it takes part in.
  for (const auto& t : plan.tasks)
    if (t.kind != plan::TaskKind::compute && t.payload.empty())
      for (std::size_t d : t.devices) pw.scratch_bytes[d] = std::max(pw.scratch_bytes[d], t.size.count());

  pw.tasks.resize(plan.tasks.size());
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    TaskWork& w = pw.tasks[i];
    if (t.kind == plan::TaskKind::compute) {
      w.compute = true;
      continue;
    }
    std::vector<const plan::Region*> reduction_key;  // the first region of each Reduction
    for (const auto& r : t.payload) {
      const std::size_t sb = r.src_buffer;
      const std::size_t db = r.dst_buffer;
      const plan::Tensor& tensor = plan.tensors[r.tensor];
      const BufferCopy c{sb, db, copy_of(tensor, r, plan.buffers[sb], plan.buffers[db])};
      pw.payload_bytes += c.copy.bytes();
      if (!r.reduce) {
        w.copies.push_back(c);
        continue;
      }
      auto same = [&](const plan::Region* k) {
        return k->dst_buffer == r.dst_buffer && k->dst_offset == r.dst_offset && k->tensor == r.tensor &&
               k->box == r.box;
      };
      const auto it = std::find_if(reduction_key.begin(), reduction_key.end(), same);
      if (it == reduction_key.end()) {
        reduction_key.push_back(&r);
        w.reductions.push_back({tensor.dtype, db, {c}});
      } else {
        w.reductions[static_cast<std::size_t>(it - reduction_key.begin())].sources.push_back(c);
      }
    }
    if (!t.payload.empty()) continue;
    const std::int64_t s = t.size.count();
    if (s <= 0) continue;
    // Stand-in copies of a petabyte fit no machine (and their volumes must stay within int64).
    if (s > kMaxStandIn)
      throw UsageError(
          fmt::format("task \"{}\" moves {} without a payload: the runtime would stand in with "
                      "scratch copies of that size, more than any machine holds",
                      t.id, human_string(t.size)));
    const std::vector<std::size_t>& d = t.devices;
    const auto n = static_cast<std::int64_t>(d.size());
    switch (t.kind) {
      case plan::TaskKind::send: scratch_copy(w, d[0], d[1], s, s); break;
      case plan::TaskKind::broadcast:
        for (std::size_t h = 0; h + 1 < d.size(); ++h) scratch_copy(w, d[h], d[h + 1], s, s);
        break;
      case plan::TaskKind::collective: {
        if (n < 2) break;
        // The host backend stands in with the ring's edge volumes (any
        // algorithm but direct) or direct's pair volumes, from the table.
        if (t.algorithm != plan::Algorithm::direct && t.op != plan::CollectiveOp::all_to_all) {
          const std::int64_t edge = plan::ring_steps(t.op, n) * s / n;
          for (std::size_t k = 0; k < d.size(); ++k) scratch_copy(w, d[k], d[(k + 1) % d.size()], edge, s);
        } else {
          const std::int64_t pair = plan::direct_phases(t.op) * s / n;
          for (std::size_t a = 0; a < d.size(); ++a)
            for (std::size_t b = 0; b < d.size(); ++b) scratch_copy(w, d[a], d[b], pair, s);
        }
        break;
      }
      case plan::TaskKind::compute: break;
    }
    for (const auto& c : w.scratch) pw.scratch_moved += c.bytes;
  }
  return pw;
}

std::int64_t buffer_bytes(const plan::Plan& plan) {
  std::int64_t total = 0;
  for (const auto& b : plan.buffers) total = saturating_add(total, b.size.count());
  return total;
}

}  // namespace meshsim::runtime
