#include "plan/races.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"

namespace meshsim::plan {

namespace {

struct Access {
  std::size_t task = 0;
  bool write = false;
  Bytes lo, hi;              // flat buffers: [lo, hi)
  const Box* box = nullptr;  // tile buffers: the region's box
};

// A box as "[0, 4) x [2, 8)".
std::string box_text(const Box& b) {
  std::string out;
  for (std::size_t d = 0; d < b.size(); ++d)
    out += fmt::format("{}[{}, {})", d == 0 ? "" : " x ", b[d].first, b[d].second);
  return out;
}

class RaceCheck {
 public:
  RaceCheck(const Plan& plan, const Schedule& schedule, const std::string& file)
      : plan_(plan), schedule_(schedule), file_(file), pos_(plan.tasks.size()), mark_(plan.tasks.size()) {
    for (std::size_t k = 0; k < schedule.order.size(); ++k) pos_[schedule.order[k]] = k;
  }

  void run() {
    std::vector<std::vector<Access>> by_buffer(plan_.buffers.size());
    for (std::size_t t = 0; t < plan_.tasks.size(); ++t)
      for (const Region& r : plan_.tasks[t].payload) {
        const Bytes bytes = region_bytes(plan_, r);
        by_buffer[r.src_buffer].push_back({t, false, r.src_offset, r.src_offset + bytes, &r.box});
        by_buffer[r.dst_buffer].push_back({t, true, r.dst_offset, r.dst_offset + bytes, &r.box});
      }
    for (std::size_t b = 0; b < by_buffer.size(); ++b) check_buffer(b, by_buffer[b]);
  }

 private:
  void check_buffer(std::size_t b, std::vector<Access>& all) {
    const bool tile = !plan_.buffers[b].box.empty();
    // Sweep by start: each access meets those still open (tiles: all of
    // them; a tile buffer is touched by few regions).
    std::sort(all.begin(), all.end(), [](const Access& x, const Access& y) { return x.lo < y.lo; });
    std::vector<const Access*> open;
    for (const Access& a : all) {
      if (!tile) std::erase_if(open, [&](const Access* o) { return o->hi <= a.lo; });
      for (const Access* o : open) {
        if (o->task == a.task || (!o->write && !a.write)) continue;
        if (tile && intersect(*o->box, *a.box).empty()) continue;
        check_pair(b, *o, a, tile);
      }
      open.push_back(&a);
    }
  }

  void check_pair(std::size_t b, const Access& x, const Access& y, bool tile) {
    const bool x_first = pos_[x.task] < pos_[y.task];
    const Access& early = x_first ? x : y;
    const Access& late = x_first ? y : x;
    if (!checked_.insert(early.task * plan_.tasks.size() + late.task).second) return;
    if (waits_for(late.task, early.task)) return;
    const Buffer& buf = plan_.buffers[b];
    const std::string where = tile ? fmt::format("the box {} of", box_text(intersect(*x.box, *y.box)))
                                   : fmt::format("bytes [{}, {}) of", exact_string(std::max(x.lo, y.lo)),
                                                 exact_string(std::min(x.hi, y.hi)));
    auto does = [](const Access& a) { return a.write ? "writes" : "reads"; };
    throw ConfigError(
        file_, fmt::format("tasks[{}]", late.task),
        fmt::format("task \"{}\" {} {} buffer \"{}\" on {}, which task \"{}\" {}, and neither waits for the "
                    "other (add a dep, or put both on one stream of that device)",
                    plan_.tasks[late.task].id, does(late), where, buf.name, plan_.devices[buf.device],
                    plan_.tasks[early.task].id, does(early)));
  }

  // Whether `late` waits (through preds) for `early`: a walk back from
  // `late` that never goes before `early` in the schedule.
  bool waits_for(std::size_t late, std::size_t early) {
    ++stamp_;
    stack_.assign(1, late);
    mark_[late] = stamp_;
    while (!stack_.empty()) {
      const std::size_t t = stack_.back();
      stack_.pop_back();
      for (std::size_t p : schedule_.preds[t]) {
        if (p == early) return true;
        if (mark_[p] == stamp_ || pos_[p] < pos_[early]) continue;
        mark_[p] = stamp_;
        stack_.push_back(p);
      }
    }
    return false;
  }

  const Plan& plan_;
  const Schedule& schedule_;
  const std::string& file_;
  std::vector<std::size_t> pos_;
  std::vector<std::uint64_t> mark_;
  std::uint64_t stamp_ = 0;
  std::vector<std::size_t> stack_;
  std::unordered_set<std::size_t> checked_;
};

}  // namespace

void check_races(const Plan& plan, const Schedule& schedule, const std::string& file) {
  RaceCheck(plan, schedule, file).run();
}

}  // namespace meshsim::plan
