#pragma once
// Plain-text tables: columns padded to their widest cell.

#include <string>
#include <vector>

namespace meshsim {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  /// Columns listed in `right` are right-aligned (numbers).
  [[nodiscard]] std::string render(const std::vector<bool>& right = {}) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace meshsim
