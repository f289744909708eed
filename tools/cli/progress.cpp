#include "tools/cli/progress.h"

#include <chrono>
#include <memory>
#include <unistd.h>

#include <fmt/format.h>

namespace meshsim::cli {

std::function<void(std::size_t, std::size_t)> progress_reporter(std::string label, std::string unit,
                                                                bool quiet) {
  struct State {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    std::size_t tenth = 0;
    bool ended = false;
  };
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto st = std::make_shared<State>();
  return [=](std::size_t done, std::size_t total) {
    if (quiet || total == 0 || st->ended) return;
    const bool last = done >= total;
    if (tty) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - st->t0).count();
      const double rate = s > 0 ? static_cast<double>(done) / s : 0;
      const std::string pace = rate > 0 && !last ? fmt::format(", {:.3g}/s, {:.0f} s left", rate,
                                                               static_cast<double>(total - done) / rate)
                                                 : std::string();
      fmt::print(stderr, "\r{}: {}/{} {}{}   {}", label, done, total, unit, pace, last ? "\n" : "");
    } else if (last || done * 10 / total > st->tenth) {
      st->tenth = done * 10 / total;
      fmt::print(stderr, "{}: {}/{} {}\n", label, done, total, unit);
    }
    st->ended = last;
  };
}

}  // namespace meshsim::cli
