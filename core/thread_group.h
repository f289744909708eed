#pragma once
// Worker threads that are always joined. Starting a thread can fail (the
// process's thread or memory limit: std::system_error); a std::vector of
// std::thread would then be destroyed with joinable threads, which ends the
// program (std::terminate). A ThreadGroup joins the ones that started and
// reports the failure as a UsageError naming how many were asked for.
// An exception that leaves a worker (std::bad_alloc, a UsageError) would
// also end the program: the group keeps the first one and join() throws it
// on the joining thread.

#include <exception>
#include <mutex>
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
  ~ThreadGroup() { join_all(); }

  /// Starts f on a new thread, the k-th of `wanted`; on failure joins the
  /// started ones (they finish their work first) and throws UsageError.
  template <typename F>
  void start(F&& f, std::size_t wanted) {
    try {
      threads_.emplace_back([this, f = std::forward<F>(f)]() mutable {
        try {
          f();
        } catch (...) {
          const std::lock_guard<std::mutex> hold(lock_);
          if (!error_) error_ = std::current_exception();
        }
      });
    } catch (const std::system_error& e) {
      const std::size_t started = threads_.size();
      join_all();
      throw UsageError(fmt::format("could not start {} {}: only {} started ({}); ask for fewer", wanted,
                                   what_, started, e.what()));
    }
  }
  /// Joins every thread, then throws the first exception that left one.
  void join() {
    join_all();
    if (std::exception_ptr e = std::exchange(error_, nullptr)) std::rethrow_exception(e);
  }

 private:
  void join_all() noexcept {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

  std::string what_;
  std::vector<std::thread> threads_;
  std::mutex lock_;
  std::exception_ptr error_;
};

}  // namespace meshsim
