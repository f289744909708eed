#include "plan/races.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"

namespace meshsim::plan {

namespace {

struct Access {
  std::size_t task = 0;
  bool write = false;
  bool reduce = false;       // a write that sums into its bytes
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
        by_buffer[r.src_buffer].push_back({t, false, r.reduce, r.src_offset, r.src_offset + bytes, &r.box});
        by_buffer[r.dst_buffer].push_back({t, true, r.reduce, r.dst_offset, r.dst_offset + bytes, &r.box});
      }
    for (std::size_t b = 0; b < by_buffer.size(); ++b) {
      if (plan_.buffers[b].box.empty())
        check_flat(b, by_buffer[b]);
      else
        check_tiles(b, by_buffer[b]);
    }
  }

 private:
  // A stretch of a flat buffer that every access so far covers whole: its
  // last write and the reads since. An access conflicts with the last
  // write and, if it writes, with those reads; older accesses need no
  // check, as they all happen before the last write (else it was refused).
  struct Stretch {
    Bytes end;
    const Access* write = nullptr;
    std::vector<const Access*> reads;
  };

  // Flat buffers: accesses in schedule order (a task's reads before its
  // writes) over a map of stretches, split at every access's ends; about
  // n log n for n accesses that do not pile up on one another.
  void check_flat(std::size_t b, std::vector<Access>& all) {
    std::sort(all.begin(), all.end(), [&](const Access& x, const Access& y) {
      return pos_[x.task] != pos_[y.task] ? pos_[x.task] < pos_[y.task] : x.write < y.write;
    });
    std::map<Bytes, Stretch> stretches;  // by start
    auto split_at = [&](Bytes at) {
      auto it = stretches.upper_bound(at);
      if (it == stretches.begin()) return;
      --it;
      if (it->first == at || it->second.end <= at) return;
      Stretch tail = it->second;
      it->second.end = at;
      stretches.emplace(at, std::move(tail));
    };
    for (const Access& a : all) {
      if (a.lo >= a.hi) continue;
      split_at(a.lo);
      split_at(a.hi);
      // Fill the gaps [a.lo, a.hi) leaves between existing stretches.
      Bytes at = a.lo;
      for (auto it = stretches.lower_bound(a.lo); at < a.hi; ++it) {
        const Bytes next = it == stretches.end() ? a.hi : std::min(it->first, a.hi);
        if (at < next) it = stretches.emplace_hint(it, at, Stretch{next, nullptr, {}});
        at = it->second.end;
      }
      for (auto it = stretches.lower_bound(a.lo); it != stretches.end() && it->first < a.hi; ++it) {
        Stretch& st = it->second;
        if (st.write != nullptr) meet(b, *st.write, a, false);
        if (a.write)
          for (const Access* r : st.reads) meet(b, *r, a, false);
        if (a.write) {
          st.write = &a;
          st.reads.clear();
        } else {
          st.reads.push_back(&a);
        }
      }
    }
  }

  // Tile buffers: a sweep along the dimension whose boxes start at the most
  // places; each box meets those still open along it.
  void check_tiles(std::size_t b, std::vector<Access>& all) {
    const std::size_t d = sweep_dimension(all);
    auto lo = [d](const Access& a) { return (*a.box)[d].first; };
    auto hi = [d](const Access& a) { return (*a.box)[d].second; };
    std::sort(all.begin(), all.end(), [&](const Access& x, const Access& y) { return lo(x) < lo(y); });
    std::vector<const Access*> open;
    for (const Access& a : all) {
      std::erase_if(open, [&](const Access* o) { return hi(*o) <= lo(a); });
      for (const Access* o : open)
        if (!intersect(*o->box, *a.box).empty()) meet(b, *o, a, true);
      open.push_back(&a);
    }
  }

  [[nodiscard]] static std::size_t sweep_dimension(const std::vector<Access>& all) {
    if (all.empty() || all.front().box->empty()) return 0;
    std::size_t best = 0;
    std::size_t best_starts = 0;
    for (std::size_t d = 0; d < all.front().box->size(); ++d) {
      std::vector<std::int64_t> starts;
      for (const Access& a : all) starts.push_back((*a.box)[d].first);
      std::sort(starts.begin(), starts.end());
      const auto n = static_cast<std::size_t>(std::unique(starts.begin(), starts.end()) - starts.begin());
      if (n > best_starts) {
        best = d;
        best_starts = n;
      }
    }
    return best;
  }

  // Two accesses to overlapping bytes: one task's two writes must both
  // sum (a reduction's parts); two tasks' accesses, one a write, must be
  // ordered.
  void meet(std::size_t b, const Access& x, const Access& y, bool tile) {
    if (x.task == y.task) {
      if (x.write && y.write && !(x.reduce && y.reduce)) overwrite_in_task(b, x, y, tile);
      return;
    }
    if (x.write || y.write) check_pair(b, x, y, tile);
  }

  [[nodiscard]] static std::string overlap_text(const Access& x, const Access& y, bool tile) {
    return tile ? fmt::format("the box {} of", box_text(intersect(*x.box, *y.box)))
                : fmt::format("bytes [{}, {}) of", exact_string(std::max(x.lo, y.lo)),
                              exact_string(std::min(x.hi, y.hi)));
  }

  [[noreturn]] void overwrite_in_task(std::size_t b, const Access& x, const Access& y, bool tile) const {
    const Buffer& buf = plan_.buffers[b];
    throw ConfigError(
        file_, fmt::format("tasks[{}]", x.task),
        fmt::format("task \"{}\" writes {} buffer \"{}\" on {} from two of its regions: which "
                    "one survives is not defined (give each region its own bytes, or make both "
                    "sum with \"reduce\")",
                    plan_.tasks[x.task].id, overlap_text(x, y, tile), buf.name, plan_.devices[buf.device]));
  }

  void check_pair(std::size_t b, const Access& x, const Access& y, bool tile) {
    const bool x_first = pos_[x.task] < pos_[y.task];
    const Access& early = x_first ? x : y;
    const Access& late = x_first ? y : x;
    if (!checked_.insert(early.task * plan_.tasks.size() + late.task).second) return;
    if (waits_for(late.task, early.task)) return;
    const Buffer& buf = plan_.buffers[b];
    const std::string where = overlap_text(x, y, tile);
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
