#pragma once
// Loading an optional shared library at run time (cuBLAS, NCCL): the
// binaries then start on machines without it and say so only when a
// backend needs it.

#include <string>
#include <vector>

namespace meshsim::runtime {

class DynLib {
 public:
  /// Tries each name in turn; loaded() tells whether one opened, error() why not.
  explicit DynLib(const std::vector<std::string>& names);
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;
  ~DynLib();

  [[nodiscard]] bool loaded() const { return handle_ != nullptr; }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  /// The symbol, or nullptr.
  [[nodiscard]] void* symbol(const char* name) const;
  /// The symbol cast to a function pointer type; UsageError if it is missing.
  template <typename F>
  [[nodiscard]] F function(const char* name) const {
    return reinterpret_cast<F>(required(name));  // NOLINT: dlsym returns object pointers
  }

 private:
  [[nodiscard]] void* required(const char* name) const;
  void* handle_ = nullptr;
  std::string name_;
  std::string error_;
};

}  // namespace meshsim::runtime
