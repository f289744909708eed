#include "core/input_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim {

std::string read_input_file(const std::string& file, std::string_view kind) {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status)) throw ConfigError(file, "", "no such file");
  if (std::filesystem::is_directory(status))
    throw ConfigError(file, "", fmt::format("is a directory, not {}", kind));
  if (!std::filesystem::is_regular_file(status)) throw ConfigError(file, "", "is not a regular file");
  const auto bytes = std::filesystem::file_size(file, ec);
  if (!ec && bytes > kMaxInputFileBytes)
    throw ConfigError(file, "",
                      fmt::format("is {:.1f} MiB; a meshsim input may be at most {} MiB",
                                  static_cast<double>(bytes) / (1 << 20), kMaxInputFileBytes >> 20));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file, "", "cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::move(ss).str();
}

PathKind path_kind(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return PathKind::none;
  if (std::filesystem::is_regular_file(status)) return PathKind::file;
  return std::filesystem::is_directory(status) ? PathKind::directory : PathKind::other;
}

std::string resolve_beside(const std::string& file, const std::string& name) {
  const auto rel = std::filesystem::path(file).parent_path() / name;
  return path_kind(rel.string()) != PathKind::none ? rel.lexically_normal().string() : name;
}

}  // namespace meshsim
