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

namespace {
// Length of the valid UTF-8 sequence at the start of s, or 0 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  return n;
}

void append_escaped(std::string& out, std::string_view text) {
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text[0]);
    const std::size_t n = utf8_length(text);
    if (n == 0 || (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
      text.remove_prefix(1);
    } else {
      out.append(text.substr(0, n));
      text.remove_prefix(n);
    }
  }
}

// Where to cut near `at` without splitting a UTF-8 sequence.
std::size_t boundary(std::string_view s, std::size_t at) {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
  return at;
}
}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  if (text.size() <= max_bytes) {
    append_escaped(out, text);
    return out;
  }
  const std::size_t head = boundary(text, max_bytes / 2);
  const std::size_t tail = boundary(text, text.size() - max_bytes / 4);
  append_escaped(out, text.substr(0, head));
  out += fmt::format(" [... {} bytes left out ...] ", tail - head);
  append_escaped(out, text.substr(tail));
  return out;
}

void assertion_failed(const char* expr, const char* file, int line, const std::string& message) {
  throw InternalError(
      fmt::format("internal error: {} ({}:{}: assertion `{}` failed)", message, file, line, expr));
}

}  // namespace meshsim
