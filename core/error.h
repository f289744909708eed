#pragma once
// Error types shared by every meshsim library.
//
// User and configuration mistakes throw typed exceptions derived from
// meshsim::Error; the CLI turns them into one message and exit code 2.
// A device that fails while it runs a plan throws DeviceError (exit code 4).
// Broken internal invariants throw InternalError through MESHSIM_ASSERT; the
// CLI reports those as bugs (exit code 3). Library code never calls exit().

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace meshsim {

/// Base of every error meshsim reports to a user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A value string that does not parse, e.g. "25GB" given where a rate is
/// expected. Loaders catch it and rethrow it as a ConfigError with a path.
class ParseError : public Error {
 public:
  using Error::Error;
};

/// A mistake in an input file. Carries the file and the JSON path of the
/// offending value (e.g. `links[3].bandwidth`); what() reads
/// `file: links[3].bandwidth: message`.
class ConfigError : public Error {
 public:
  ConfigError(std::string file, std::string json_path, std::string message);

  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] const std::string& json_path() const noexcept { return json_path_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  std::string file_;
  std::string json_path_;
  std::string message_;
};

/// A request that names something that does not exist or cannot be done on
/// this topology (unknown device, no route, bad mesh selector).
class UsageError : public Error {
 public:
  using Error::Error;
};

/// A device fault while a plan or a calibration runs: a CUDA, cuBLAS or
/// NCCL call that fails, or a task that makes no progress within the
/// run's timeout. Not the input's fault, and not a bug in meshsim: the
/// GPU, its driver, the interconnect or a peer rank. (A machine that has
/// no GPU or no driver at all is an environment the user chose: a
/// UsageError.)
class DeviceError : public Error {
 public:
  using Error::Error;
};

/// A broken internal invariant: a bug in meshsim, never a user mistake.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// A message made safe to print: bytes that are not valid UTF-8 and
/// control characters other than newline and tab become `\xNN`, so an
/// input's raw bytes never reach a terminal or log; a message longer than
/// `max_bytes` keeps its head and tail around a note of what was left out.
[[nodiscard]] std::string printable(std::string_view text, std::size_t max_bytes = 2000);

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const std::string& message);

}  // namespace meshsim

/// Internal invariant check, active in every build type.
#define MESHSIM_ASSERT(cond, message)                                               \
  do {                                                                              \
    if (!(cond)) ::meshsim::assertion_failed(#cond, __FILE__, __LINE__, (message)); \
  } while (false)
