#pragma once
// Worker threads that are always joined. Starting a thread can fail (the
// process's thread or memory limit: std::system_error); a std::vector of
// std::thread would then be destroyed with joinable threads, which ends the
// program (std::terminate). A ThreadGroup joins the ones that started and
// reports the failure as a UsageError naming how many were asked for.

#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim {

class ThreadGroup {
 public:
  /// `what`: what the threads are for, and the option that sets their number,
  /// for the message ("worker threads (--threads)").
  explicit ThreadGroup(std::string what) : what_(std::move(what)) {}
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;
  ~ThreadGroup() { join(); }

  /// Starts f on a new thread, the k-th of `wanted`; on failure joins the
  /// started ones (they finish their work first) and throws UsageError.
  template <typename F>
  void start(F&& f, std::size_t wanted) {
    try {
      threads_.emplace_back(std::forward<F>(f));
    } catch (const std::system_error& e) {
      const std::size_t started = threads_.size();
      join();
      throw UsageError(fmt::format("could not start {} {}: only {} started ({}); ask for fewer", wanted,
                                   what_, started, e.what()));
    }
  }
  void join() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

 private:
  std::string what_;
  std::vector<std::thread> threads_;
};

}  // namespace meshsim
