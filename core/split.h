#pragma once
// Splitting a comma list ("a,b,c"), as selectors and list options write them.

#include <string_view>
#include <vector>

namespace meshsim {

/// The items of `s` between commas, empty ones kept ("a,,b" has three; ""
/// has one, empty): the caller decides what an empty item means.
[[nodiscard]] inline std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace meshsim
