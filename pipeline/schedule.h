#pragma once
// Pipeline schedules (their kinds, model::Schedule, in model/parallel_config.h): the order in which each
// pipeline device runs the forward (F), backward (B) and, for zero-bubble schedules, weight-gradient (W)
// passes of m microbatches. n devices, stage i 0-based; with v virtual stages per device (interleaved),
// device i holds chunks c = 0..v−1, which are virtual stages c·n + i.
//
//   gpipe             all m forwards, then all m backwards
//   1f1b              warm-up w = min(m, n−i−1) forwards, then one forward
//                     and one backward in turn, then the remaining backwards;
//                     in flight on stage i: min(m, n−i)
//   eager-1f1b        warm-up w = min(m, 2(n−i)−1) forwards, then one
//                     backward and one forward in turn, then the rest; the
//                     extra forwards give activation transfers slack;
//                     in flight: min(m, 2(n−i)−1)
//   interleaved-1f1b  Megatron's: v·m passes of each kind per device, taken
//                     in groups of n microbatches per chunk (forward chunk
//                     order 0..v−1, backward v−1..0); warm-up
//                     min(v·m, 2(n−i−1) + (v−1)·n), then 1F1B; m must be a
//                     multiple of n
//   zb-h1             1F1B's F/B order with every backward split into B (the
//                     input gradient, which the previous stage waits for) and
//                     W (the weight gradient); stage i defers its W passes by
//                     up to i slots: the backward chain of the drain then
//                     costs B per stage, and the later stages, which finish
//                     their Bs first, fill their tail with the deferred Ws
//                     (our reading of Qi et al.'s ZB-H1). Bubble
//                     (n−1)(F+B−W) instead of 1F1B's (n−1)(F+B+W): a third
//                     when the three take equal time; every stage holds up
//                     to n microbatches, 1F1B's peak (stage 0's)
//
// Dependencies: F(mb, s) after F(mb, s−1); B(mb, s) after B(mb, s+1) and
// F(mb, s); the last virtual stage's B after its own F; W(mb, s) after
// B(mb, s). timeline() plays a schedule with given pass times (and a fixed
// transfer time between stages) and reports each pass's start and end.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/parallel_config.h"

namespace meshsim::pipeline {

enum class Pass : std::uint8_t { forward, backward, weight };

struct PipelineOp {
  Pass pass = Pass::forward;
  int microbatch = 0;
  int chunk = 0;  // virtual stage = chunk · n + device

  friend bool operator==(const PipelineOp&, const PipelineOp&) = default;
};

/// Per device, its passes in the order it runs them. UsageError for n < 1,
/// m < 1, v < 1, v > 1 with a schedule other than interleaved, or an
/// interleaved m that is not a multiple of n.
[[nodiscard]] std::vector<std::vector<PipelineOp>> make_schedule(model::Schedule s, int n, int m, int v = 1);

/// The warm-up forward count the schedule gives device i.
[[nodiscard]] int warmup_forwards(model::Schedule s, int n, int m, int v, int i);

/// Pass times of one virtual stage (seconds): forward, backward and, for
/// zb-h1, weight gradient (the backward then being only the input gradient).
struct PassTimes {
  double forward = 1;
  double backward = 2;
  double weight = 0;
};

struct OpTiming {
  double start = 0;
  double end = 0;
};

struct ScheduleTimeline {
  std::vector<std::vector<OpTiming>> ops;  // like make_schedule's
  double makespan = 0;
  double bubble = 0;                // idle / busy, averaged over devices: (makespan − busy) / busy
  std::vector<int> peak_in_flight;  // per device: most microbatch-chunks whose activations are held
};

/// Plays `ops` (from make_schedule) with `times[s]` for virtual stage s and
/// `transfer` seconds between consecutive stages. InternalError if the
/// order deadlocks (a schedule that waits for itself).
[[nodiscard]] ScheduleTimeline timeline(const std::vector<std::vector<PipelineOp>>& ops, int n, int v,
                                        const std::vector<PassTimes>& times, double transfer = 0);

/// A pass of pipeline device `device` (ops[device][index]) starting at `start`.
struct PassEvent {
  double start = 0;
  int device = 0;
  std::size_t index = 0;
};

/// The passes of every device in the order of the play `ideal` (timeline()
/// without communication): by start time, then device, then index; a
/// topological order of the passes.
[[nodiscard]] std::vector<PassEvent> play_order(const std::vector<std::vector<PipelineOp>>& ops,
                                                const ScheduleTimeline& ideal);

/// One step of a play whose stage transfers block both ends (blocking_play):
/// pass `index` of pipeline device `device`, or, with `to` ≥ 0, the
/// transfers that pass sends to virtual stage `to`.
struct PlayStep {
  int device = 0;
  std::size_t index = 0;
  int to = -1;
  friend bool operator==(const PlayStep&, const PlayStep&) = default;
};

/// An order of the passes in `ops` (n devices) and of their stage transfers
/// when a transfer holds both of its ends, as communication on the compute
/// stream does: the transfers pass P sends to the pass C that reads them
/// start once P and the pass before C on C's device are done, and P's device
/// runs nothing more until they are. sends_to[s]: the later virtual stages
/// the forward of stage s sends to (a backward sends its gradients back the
/// same way); transfers between stages on one device move nothing and are
/// left out. Every step comes after the steps it waits for. UsageError if
/// the schedule deadlocks so.
[[nodiscard]] std::vector<PlayStep> blocking_play(const std::vector<std::vector<PipelineOp>>& ops, int n,
                                                  const std::vector<std::vector<int>>& sends_to);

}  // namespace meshsim::pipeline
