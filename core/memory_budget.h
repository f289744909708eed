#pragma once
// Memory shared by concurrent workers, each of which builds something large
// (a plan) over storage it keeps from one job to the next. Each worker
// checks its own job against the whole limit (require_memory), but workers
// run side by side: sixteen threads each within the limit can together need
// sixteen times it. A MemoryBudget makes them take turns instead.
//
// A worker holds a Share: the bytes its storage may reach. Before a job it
// asks for the job's estimate (Share::hold):
//   - no more than it holds: it goes on, unless another worker is waiting,
//     in which case it first frees its storage (`drop`) and asks anew for
//     just what the job needs, so a worker kept large by one big job does
//     not keep the others waiting for all of its later small ones;
//   - more: it grows its share while the shares together stay within the
//     capacity; otherwise it frees its storage, gives its share back, and
//     waits until the others' shares leave room (at worst, until none is
//     held).
// Waiting workers hold nothing, so some worker can always go on: no wait
// lasts forever. An estimate above the whole capacity is not held at all:
// the job's own check refuses it.
//
// Which worker runs which job when does not change any job's result, only
// how many run at once.

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace meshsim {

class MemoryBudget {
 public:
  explicit MemoryBudget(std::int64_t capacity) : capacity_(capacity) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  /// Bytes held by every share together, and the number of workers waiting.
  [[nodiscard]] std::int64_t held() const {
    const std::lock_guard<std::mutex> hold(lock_);
    return held_;
  }
  [[nodiscard]] int waiting() const {
    const std::lock_guard<std::mutex> hold(lock_);
    return waiting_;
  }

  class Share {
   public:
    explicit Share(MemoryBudget& budget) : budget_(budget) {}
    Share(const Share&) = delete;
    Share& operator=(const Share&) = delete;
    ~Share() { give_back(); }

    [[nodiscard]] std::int64_t bytes() const { return bytes_; }

    /// Holds `need` bytes for the next job (see the header); `drop()` frees
    /// the storage the worker keeps, and is called before it waits or gives
    /// its share back.
    template <typename Drop>
    void hold(std::int64_t need, Drop drop) {
      MemoryBudget& b = budget_;
      if (need > b.capacity_) return;  // refused by the job's own check
      std::unique_lock<std::mutex> lock(b.lock_);
      if (bytes_ >= need && b.waiting_ == 0) return;
      if (bytes_ < need && need - bytes_ <= b.capacity_ - b.held_) {  // (no overflow near INT64_MAX)
        b.held_ += need - bytes_;
        bytes_ = need;
        return;
      }
      drop();
      b.held_ -= bytes_;
      bytes_ = 0;
      b.room_.notify_all();
      ++b.waiting_;
      b.room_.wait(lock, [&] { return need <= b.capacity_ - b.held_; });
      --b.waiting_;
      b.held_ += need;
      bytes_ = need;
    }

   private:
    void give_back() noexcept {
      if (bytes_ == 0) return;
      MemoryBudget& b = budget_;
      const std::lock_guard<std::mutex> lock(b.lock_);
      b.held_ -= bytes_;
      bytes_ = 0;
      b.room_.notify_all();
    }

    MemoryBudget& budget_;
    std::int64_t bytes_ = 0;
  };

 private:
  const std::int64_t capacity_;
  mutable std::mutex lock_;
  std::condition_variable room_;
  std::int64_t held_ = 0;
  int waiting_ = 0;
};

}  // namespace meshsim
