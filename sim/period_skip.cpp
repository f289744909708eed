#include "sim/period_skip.h"

#include "core/hash.h"
#include "sim/kernel/engine.h"

namespace meshsim::sim {

namespace {

// Quiet instants remembered while looking for a period; the table starts
// afresh when it grows past this (a run still warming up).
constexpr std::size_t kMaxSeen = 4096;

}  // namespace

std::size_t PeriodSkip::signature(Time now, const std::vector<End>& ends) {
  std::vector<std::int64_t> words;
  words.reserve(2 * ends.size());
  for (const End& e : ends) {
    words.push_back((e.at - now).count_ps());
    words.push_back(static_cast<std::int64_t>(e.task - ends.front().task));
  }
  return static_cast<std::size_t>(hash_words(words));
}

// The shift Δ > 0 by which `ends` at `now` repeats snapshot a, if it does.
std::optional<std::size_t> PeriodSkip::shift_between(const Snapshot& a, Time now,
                                                     const std::vector<End>& ends) {
  if (a.ends.size() != ends.size() || ends.front().task <= a.ends.front().task) return std::nullopt;
  const std::size_t shift = ends.front().task - a.ends.front().task;
  for (std::size_t k = 0; k < ends.size(); ++k)
    if (ends[k].task != a.ends[k].task + shift || ends[k].at - now != a.ends[k].at - a.at)
      return std::nullopt;
  return shift;
}

std::optional<PeriodSkip::Jump> PeriodSkip::quiet(Time now, const std::vector<End>& ends,
                                                  std::uint64_t events,
                                                  const std::vector<double>& link_bytes) {
  if (ends.empty() || gave_up()) return std::nullopt;
  if (armed_) {
    if (now < armed_->b.at + armed_->period) return std::nullopt;
    Armed a = std::move(*armed_);
    armed_.reset();
    if (now == a.b.at + a.period && shift_between(a.b, now, ends) == a.shift) {
      const std::int64_t windows = replay(a.b, log_.size(), a.shift, a.period, ends);
      if (windows > 0) {
        seen_.clear();
        bytes_at_b_ = std::move(a.bytes);
        return Jump{windows, static_cast<std::size_t>(windows) * a.shift, a.period * windows,
                    static_cast<std::uint64_t>(windows) * (events - a.b.events), &bytes_at_b_};
      }
      ++failures_;
    }
  }
  if (seen_.size() >= kMaxSeen) seen_.clear();
  Snapshot& s = seen_[signature(now, ends)];
  if (!s.ends.empty()) {
    if (const auto shift = shift_between(s, now, ends)) {
      // Seen once: C = now + (now − s.at) will say whether it repeats.
      armed_ = Armed{Snapshot{now, log_.size(), events, ends}, *shift, now - s.at, link_bytes};
      return std::nullopt;
    }
  }
  s = Snapshot{now, log_.size(), events, ends};
  return std::nullopt;
}

// Replays W = log_[b.log, c_log) as many times as it repeats; the count.
std::int64_t PeriodSkip::replay(const Snapshot& b, std::size_t c_log, std::size_t shift, Time period,
                                const std::vector<End>& c_ends) {
  const std::size_t n = tasks_.preds_left.size();
  if (lost_.size() < n) {
    lost_.assign(n, 0);
    started_here_.assign(n, false);
  }
  std::int64_t k = 0;
  // A window replayed must end, and leave its pending ends, within the
  // clock's range: beyond it the simulation itself says so.
  const Time last_end = c_ends.back().at;  // ends are in time order
  const std::int64_t room = (kernel::Engine::kClockLimit - last_end).count_ps() / period.count_ps();
  while (k < room &&
         check_window(b.log, c_log, shift * static_cast<std::size_t>(k + 1), period * (k + 1), c_ends)) {
    commit_window(b.log, c_log, shift * static_cast<std::size_t>(k + 1), period * (k + 1));
    ++k;
  }
  return k;
}

bool PeriodSkip::check_window(std::size_t from, std::size_t to, std::size_t by, Time later,
                              const std::vector<End>& c_ends) {
  const std::size_t n = tasks_.preds_left.size();
  bool ok = true;
  std::size_t next_start = 0;  // into expected_
  expected_.clear();
  for (std::size_t p = from; p < to && ok; ++p) {
    const std::size_t i = log_[p] >> 1;
    const std::size_t j = i + by;
    if (j >= n) {
      ok = false;
    } else if ((log_[p] & 1) != 0) {
      ok = finish_matches(i, j, by, later, next_start);
    } else {
      // A start: the next task the last finish left free, doing i's work.
      ok = next_start < expected_.size() && expected_[next_start] == j && !tasks_.started[j] &&
           run_.same_work(i, j);
      ++next_start;
      if (ok) {
        started_here_[j] = true;
        touched_.push_back(j);
      }
    }
  }
  ok = ok && next_start == expected_.size();
  // The window ends where C's pending ends, `by` on, are running.
  for (std::size_t k = 0; k < c_ends.size() && ok; ++k) {
    const std::size_t j = c_ends[k].task + by;
    ok = j < n && (tasks_.started[j] || started_here_[j]) && !tasks_.finished[j];
  }
  for (std::size_t t : touched_) {
    lost_[t] = 0;
    started_here_[t] = false;
  }
  touched_.clear();
  return ok;
}

// Whether finish i, replayed as j = i + by, `later`, matches: j running
// since i's start + later; j's successors i's, + by; those it frees into
// expected_ (the starts to follow).
bool PeriodSkip::finish_matches(std::size_t i, std::size_t j, std::size_t by, Time later,
                                std::size_t& next_start) {
  if (next_start != expected_.size() || tasks_.finished[j]) return false;
  if (!started_here_[j] && (!tasks_.started[j] || tasks_.spans[j].start != tasks_.spans[i].start + later))
    return false;
  expected_.clear();
  next_start = 0;
  const auto si = tasks_.succs[i];
  const auto sj = tasks_.succs[j];
  if (si.size() != sj.size()) return false;
  for (std::size_t x = 0; x < sj.size(); ++x) {
    const std::size_t t = sj[x];
    if (t != si[x] + by || tasks_.started[t]) return false;
    if (lost_[t] == 0) touched_.push_back(t);
    if (++lost_[t] > tasks_.preds_left[t]) return false;
    if (lost_[t] == tasks_.preds_left[t]) expected_.push_back(t);
  }
  return true;
}

void PeriodSkip::commit_window(std::size_t from, std::size_t to, std::size_t by, Time later) {
  for (std::size_t p = from; p < to; ++p) {
    const std::size_t i = log_[p] >> 1;
    const std::size_t j = i + by;
    if ((log_[p] & 1) == 0) {
      run_.replay_start(j, i, tasks_.spans[i].start + later);
      ++replayed_;
      continue;
    }
    run_.replay_finish(j, tasks_.spans[i].end + later);
    for (std::size_t t : tasks_.succs[j]) --tasks_.preds_left[t];
  }
}

}  // namespace meshsim::sim
