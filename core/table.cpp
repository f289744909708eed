#include "core/table.h"

#include <algorithm>

#include <fmt/format.h>

namespace meshsim {

std::string Table::render(const std::vector<bool>& right) const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = " ";
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string& cell = i < row.size() ? row[i] : std::string();
      const bool r = i < right.size() && right[i];
      out += r ? fmt::format(" {:>{}}", cell, width[i]) : fmt::format(" {:<{}}", cell, width[i]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace meshsim
