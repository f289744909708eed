// The orders a pipeline's plan is emitted in (pipeline/schedule.h):
// play_order, the passes of an ideal play, and blocking_play, passes and
// transfers where a transfer holds its sender and its receiver.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_set>

#include "core/error.h"
#include "pipeline/schedule.h"

namespace meshsim::pipeline {

namespace {

class BlockingPlay {
 public:
  BlockingPlay(const std::vector<std::vector<PipelineOp>>& ops, int n,
               const std::vector<std::vector<int>>& sends_to)
      : ops_(ops),
        n_(n),
        stages_(static_cast<int>(sends_to.size())),
        sends_to_(sends_to),
        back_to_(sends_to.size()),
        next_(ops.size(), 0) {
    for (const auto& dev : ops)
      for (const auto& op : dev) m_ = std::max(m_, op.microbatch + 1);
    index_of_.assign(3 * at(stages_) * at(m_), kNone);
    for (std::size_t d = 0; d < ops.size(); ++d)
      for (std::size_t k = 0; k < ops[d].size(); ++k) index_of_[key(ops[d][k], stage(ops[d][k], d))] = k;
    for (int a = 0; a < stages_; ++a)
      for (int b : sends_to[at(a)]) back_to_[at(b)].push_back(a);
  }

  std::vector<PlayStep> play() {
    std::size_t left = 0;
    for (const auto& dev : ops_) left += dev.size();
    while (left > 0) {
      bool progress = false;
      for (std::size_t d = 0; d < ops_.size(); ++d)
        while (ready(d)) {
          out_.push_back({static_cast<int>(d), next_[d], -1});
          const std::size_t k = next_[d]++;
          --left;
          progress = true;
          const PipelineOp& op = ops_[d][k];
          for (int to : targets(op.pass, stage(op, d))) try_send(d, k, to);
          if (next_[d] == ops_[d].size()) continue;
          const PipelineOp& after = ops_[d][next_[d]];  // the transfers it reads, now its predecessor is done
          for (int from : sources(after.pass, stage(after, d)))
            try_send(at(from % n_), index_of_[key({after.pass, after.microbatch, from / n_}, from)],
                     stage(after, d));
        }
      if (!progress)
        throw UsageError("the schedule deadlocks when stage transfers hold both ends (without overlap)");
    }
    return std::move(out_);
  }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  static std::size_t at(int i) { return static_cast<std::size_t>(i); }
  int stage(const PipelineOp& op, std::size_t d) const { return op.chunk * n_ + static_cast<int>(d); }
  std::size_t key(const PipelineOp& op, int s) const {
    return (static_cast<std::size_t>(op.pass) * at(stages_) + at(s)) * at(m_) + at(op.microbatch);
  }
  std::uint64_t sent_key(const PipelineOp& op, int from, int to) const {
    return static_cast<std::uint64_t>(key(op, from)) * static_cast<std::uint64_t>(stages_) + at(to);
  }
  // The stages pass `p` of stage s sends to, and those it reads from.
  const std::vector<int>& targets(Pass p, int s) const {
    return p == Pass::forward ? sends_to_[at(s)] : p == Pass::backward ? back_to_[at(s)] : none_;
  }
  const std::vector<int>& sources(Pass p, int s) const {
    return p == Pass::forward ? back_to_[at(s)] : p == Pass::backward ? sends_to_[at(s)] : none_;
  }
  bool local(int from, int to) const { return from % n_ == to % n_; }

  // The transfers of pass k of device d to stage `to`, once it and the pass
  // before their reader are done.
  void try_send(std::size_t d, std::size_t k, int to) {
    const PipelineOp& op = ops_[d][k];
    const int from = stage(op, d);
    if (local(from, to) || k >= next_[d] || sent_.count(sent_key(op, from, to)) > 0) return;
    const std::size_t cd = at(to % n_);
    const std::size_t ck = index_of_[key({op.pass, op.microbatch, to / n_}, to)];
    if (ck == kNone || (ck > 0 && ck - 1 >= next_[cd])) return;
    sent_.insert(sent_key(op, from, to));
    out_.push_back({static_cast<int>(d), k, to});
  }

  bool is_sent(const PipelineOp& op, int from, int to) const {
    return local(from, to) || sent_.count(sent_key(op, from, to)) > 0;
  }

  // Pass next_[d] may run: its device's previous pass has sent everything,
  // and everything it reads has come.
  bool ready(std::size_t d) const {
    const std::size_t k = next_[d];
    if (k >= ops_[d].size()) return false;
    if (k > 0) {
      const PipelineOp& prev = ops_[d][k - 1];
      for (int to : targets(prev.pass, stage(prev, d)))
        if (!is_sent(prev, stage(prev, d), to)) return false;
    }
    const PipelineOp& op = ops_[d][k];
    for (int from : sources(op.pass, stage(op, d)))
      if (!is_sent({op.pass, op.microbatch, from / n_}, from, stage(op, d))) return false;
    return true;
  }

  const std::vector<std::vector<PipelineOp>>& ops_;
  int n_;
  int stages_;
  int m_ = 0;
  const std::vector<std::vector<int>>& sends_to_;
  std::vector<std::vector<int>> back_to_;
  std::vector<int> none_;
  std::vector<std::size_t> index_of_;  // by key(): the op's index on its device
  std::vector<std::size_t> next_;      // per device: passes played
  std::unordered_set<std::uint64_t> sent_;
  std::vector<PlayStep> out_;
};

}  // namespace

std::vector<PassEvent> play_order(const std::vector<std::vector<PipelineOp>>& ops,
                                  const ScheduleTimeline& ideal) {
  std::vector<PassEvent> events;
  for (std::size_t p = 0; p < ops.size(); ++p)
    for (std::size_t k = 0; k < ops[p].size(); ++k)
      events.push_back({ideal.ops[p][k].start, static_cast<int>(p), k});
  std::sort(events.begin(), events.end(), [](const PassEvent& a, const PassEvent& e) {
    return a.start != e.start     ? a.start < e.start
           : a.device != e.device ? a.device < e.device
                                  : a.index < e.index;
  });
  return events;
}

std::vector<PlayStep> blocking_play(const std::vector<std::vector<PipelineOp>>& ops, int n,
                                    const std::vector<std::vector<int>>& sends_to) {
  return BlockingPlay(ops, n, sends_to).play();
}

}  // namespace meshsim::pipeline
