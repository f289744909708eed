#pragma once
// Writing CSV cells.

#include <string>
#include <string_view>

namespace meshsim {

/// `s` as one quoted CSV cell: quotes doubled, line breaks turned into
/// spaces so that a row stays on one line.
[[nodiscard]] inline std::string csv_quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace meshsim
