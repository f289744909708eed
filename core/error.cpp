#include "core/error.h"

#include <fmt/format.h>

namespace meshsim {

namespace {
std::string compose(const std::string& file, const std::string& path, const std::string& message) {
  std::string out = file.empty() ? std::string("<input>") : file;
  out += ": ";
  if (!path.empty()) {
    out += path;
    out += ": ";
  }
  out += message;
  return out;
}
}  // namespace

ConfigError::ConfigError(std::string file, std::string json_path, std::string message)
    : Error(compose(file, json_path, message)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      message_(std::move(message)) {}

void assertion_failed(const char* expr, const char* file, int line, const std::string& message) {
  throw InternalError(
      fmt::format("internal error: {} ({}:{}: assertion `{}` failed)", message, file, line, expr));
}

}  // namespace meshsim
