#pragma once
// Progress of a long command on stderr. On a terminal: one line rewritten in
// place ("study x: 12/37 cases, 3.1/s, 8 s left"), ended with a newline when
// the last step is done. In a pipe or a log file: a plain line at each
// tenth and at the end, never a carriage return. Nothing when quiet (--json).

#include <cstddef>
#include <functional>
#include <string>

namespace meshsim::cli {

/// A progress callback (done, total) as the libraries take them; `unit`
/// names the steps ("cases", "configurations").
[[nodiscard]] std::function<void(std::size_t, std::size_t)> progress_reporter(std::string label,
                                                                              std::string unit, bool quiet);

}  // namespace meshsim::cli
