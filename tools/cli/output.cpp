#include "tools/cli/output.h"

#include <fstream>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::cli {

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UsageError(fmt::format("cannot write \"{}\"", path));
  out << text;
  if (!out.flush()) throw UsageError(fmt::format("error writing \"{}\"", path));
}

}  // namespace meshsim::cli
