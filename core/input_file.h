#pragma once
// Reading an input file whole, with the checks every input gets: it must
// exist, be a regular file and be at most kMaxInputFileBytes
// (docs/limits.md). Failures are ConfigErrors naming the file.

#include <cstdint>
#include <string>
#include <string_view>

namespace meshsim {

inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{64} << 20;

/// The bytes of `file`; `kind` names what it should be in messages
/// ("a JSON file", "an XML file").
[[nodiscard]] std::string read_input_file(const std::string& file, std::string_view kind);

/// What a path names, asked without throwing: a name the system refuses
/// (too long, a bad component) names nothing.
enum class PathKind { none, file, directory, other };
[[nodiscard]] PathKind path_kind(const std::string& path);

/// A file named inside `file` (a study's model, a cluster's host file): the
/// path beside `file` when it exists there, else `name` as given.
[[nodiscard]] std::string resolve_beside(const std::string& file, const std::string& name);

}  // namespace meshsim
