#pragma once
// Skipping the repeats of a run's steady state.
//
// A training step repeats itself: once a pipeline's warm-up is over, each
// microbatch (or group of microbatches) runs the tasks of the one before,
// on the same devices, the same links, for the same times, one period
// later. The run finds such a period as it goes and replays it instead of
// simulating it again, with the task times the full simulation gives.
//
// Quiet instants. Between two instants the run is quiet when no flow is
// active or waiting out its latency and every pending event is the end of
// a task that runs on its devices alone (a compute task, a local copy, a
// collective without flows). The state of a quiet run is then the ordered
// list of those pending ends, (task, end − now), with what has finished.
//
// A period. Two quiet instants B and C = B + P match with shift Δ when
// their lists agree in length and in every end − now, and every task of
// C's list is Δ after B's in plan order. Plans built period by period
// (as meshsim's pipelines are, in the order of the schedule's ideal play)
// then hold task i + Δ for the same work as task i, one period on.
//
// The replay. The run logs each task start and finish. The window from B
// to C, W, is replayed k = 1, 2, ... times from C: start i becomes start
// i + kΔ at its time + kP, finish likewise. A window is replayed only when
// the real run would do exactly that, which holds when, for every entry,
//   - a started task i + kΔ does the same work as i (same kind, devices,
//     duration, size, path or collective shape: SkippableRun::same_work),
//     is not yet started, and has no predecessor left;
//   - a finished task i + kΔ has started, at i's start + kP, and its
//     successors are i's, each + kΔ, in the same order;
//   - the successors that the finish leaves with no predecessor are exactly
//     those whose starts follow the finish in W, each + kΔ, in that order
//     (the run starts a task as soon as its last predecessor finishes).
// By induction each replayed window then begins in the state C + (k−1)P
// would have: the same pending ends, no flow, the same predecessors left
// for every task the window touches; its flows meet only each other, on
// links they hold alone, so they share bandwidth as W's did. Time enters
// the simulator only as differences of integer picoseconds, so a shifted
// window runs as W ran. The first window that fails a check is not
// replayed, and the run simulates on from the last one replayed (nor is
// anything past the clock's range: there the simulation reports it).
//
// What "as W ran" leaves out: the solver's bookkeeping of an empty network
// (which free flow ids come next, per-link sums of weights that went back
// to zero) is left by the flows before. A flow set solved over different
// leftovers can differ in the last bits of a rate, so a replayed time can
// differ from the full simulation's within the rounding contract
// (sim/kernel/numeric.h), never more. Pipelines checked task by task
// (tests/pipeline/period_skip_test.cpp) agree to the picosecond.
//
// Counters. Link bytes grow by (bytes at C − bytes at B) per window, added
// as one product (equal to the window-by-window sum to rounding); events
// by W's count per window.

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/units.h"
#include "plan/schedule.h"

namespace meshsim::sim {

/// What PeriodSkip needs the run to do or to say.
class SkippableRun {
 public:
  /// Whether tasks a and b, started, would do the same work.
  [[nodiscard]] virtual bool same_work(std::size_t a, std::size_t b) const = 0;
  /// Task `task` starts at `at` (as `like` did: its collective choice).
  virtual void replay_start(std::size_t task, std::size_t like, Time at) = 0;
  /// Task `task` ends at `at` (its devices' busy time counted); its
  /// successors are PeriodSkip's to update.
  virtual void replay_finish(std::size_t task, Time at) = 0;

 protected:
  SkippableRun() = default;
  SkippableRun(const SkippableRun&) = default;
  SkippableRun& operator=(const SkippableRun&) = default;
  ~SkippableRun() = default;
};

/// The run's task state that the replay reads and changes.
struct RunTasks {
  const plan::Adjacency& succs;
  std::vector<std::size_t>& preds_left;
  const std::vector<plan::TaskSpan>& spans;
  const std::vector<bool>& started;
  const std::vector<bool>& finished;
};

class PeriodSkip {
 public:
  PeriodSkip(RunTasks tasks, SkippableRun& run) : tasks_(tasks), run_(run) {}

  void started(std::size_t task) {
    if (!gave_up()) log_.push_back(task << 1);
  }
  void finished(std::size_t task) {
    if (!gave_up()) log_.push_back((task << 1) | 1);
  }
  /// Whether it has stopped looking (periods found too often that did not
  /// replay): the run may then simulate on without calling quiet().
  [[nodiscard]] bool gave_up() const { return failures_ >= kMaxFailures; }

  /// A pending task end at a quiet instant.
  struct End {
    Time at;
    std::size_t task;
  };
  /// What the run skips: `windows` periods, `tasks` later in plan order and
  /// `time` later, with `events` more events; link bytes as
  /// FlowNetwork::repeat_done_bytes(*bytes_at_start, windows).
  struct Jump {
    std::int64_t windows = 0;
    std::size_t tasks = 0;
    Time time;
    std::uint64_t events = 0;
    const std::vector<double>* bytes_at_start = nullptr;
  };
  /// At a quiet instant: `ends` in the order they will run, the events run
  /// so far, the links' bytes so far. The windows already replayed, if any:
  /// the run then jumps as told.
  std::optional<Jump> quiet(Time now, const std::vector<End>& ends, std::uint64_t events,
                            const std::vector<double>& link_bytes);

  /// Tasks replayed so far.
  [[nodiscard]] std::uint64_t replayed() const { return replayed_; }

 private:
  struct Snapshot {
    Time at;
    std::size_t log = 0;  // log_ position
    std::uint64_t events = 0;
    std::vector<End> ends;
  };
  // A period seen once (B, from an earlier match), waiting for C = B + P.
  struct Armed {
    Snapshot b;
    std::size_t shift = 0;
    Time period;
    std::vector<double> bytes;  // link bytes at B
  };

  // Periods found that did not replay before the run stops looking.
  static constexpr int kMaxFailures = 8;

  static std::size_t signature(Time now, const std::vector<End>& ends);
  static std::optional<std::size_t> shift_between(const Snapshot& a, Time now, const std::vector<End>& ends);
  std::int64_t replay(const Snapshot& b, std::size_t c_log, std::size_t shift, Time period,
                      const std::vector<End>& c_ends);
  bool check_window(std::size_t from, std::size_t to, std::size_t by, Time later,
                    const std::vector<End>& c_ends);
  bool finish_matches(std::size_t i, std::size_t j, std::size_t by, Time later, std::size_t& next_start);
  void commit_window(std::size_t from, std::size_t to, std::size_t by, Time later);

  RunTasks tasks_;
  SkippableRun& run_;
  std::vector<std::size_t> log_;  // task << 1 | finished
  std::unordered_map<std::size_t, Snapshot> seen_;
  std::optional<Armed> armed_;
  std::vector<double> bytes_at_b_;  // the last Jump's bytes_at_start
  int failures_ = 0;
  std::uint64_t replayed_ = 0;
  // check_window's scratch: predecessors each task would lose, and which.
  std::vector<std::uint32_t> lost_;
  std::vector<std::size_t> touched_;
  std::vector<std::size_t> expected_;
  std::vector<bool> started_here_;
};

}  // namespace meshsim::sim
