#pragma once
// JSON helpers for loaders: a cursor that knows its file and JSON path, so
// that every error names where it is (`links[3].bandwidth: ...`).

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/units.h"

namespace meshsim {

using Json = nlohmann::ordered_json;

/// The limits on every JSON input (docs/limits.md).
inline constexpr std::size_t kMaxJsonDepth = 100;
/// Bytes of a name (a device, task, buffer, case, file name) in any input.
inline constexpr std::size_t kMaxJsonName = 4096;

/// Reads a JSON document; syntax errors become ConfigError with line and
/// column. `file` is used in messages; an unreadable file, one over
/// kMaxInputFileBytes (core/input_file.h), nesting deeper than kMaxJsonDepth, a key twice in one
/// object or a number beyond a double's range is a ConfigError (with the
/// JSON path where there is one).
[[nodiscard]] Json read_json_file(const std::string& file);
[[nodiscard]] Json parse_json_text(std::string_view text, const std::string& file);

/// Whether `j` is an object whose "format" is `format`.
[[nodiscard]] bool has_format(const Json& j, std::string_view format);

/// Writes `j` with two-space indentation and a final newline: the one
/// layout of every file meshsim writes, so that outputs diff cleanly.
[[nodiscard]] std::string dump_json(const Json& j);

/// A read-only view of one value of a document, with its path.
class JsonCursor {
 public:
  JsonCursor(const Json& value, std::string file, std::string path = "")
      : value_(&value), file_(std::make_shared<const std::string>(std::move(file))), path_(std::move(path)) {}

  [[nodiscard]] const Json& json() const { return *value_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& file() const { return *file_; }

  /// Throws ConfigError(file, path, message).
  [[noreturn]] void fail(const std::string& message) const;

  // Objects.
  [[nodiscard]] bool is_object() const { return value_->is_object(); }
  [[nodiscard]] bool has(std::string_view key) const;
  /// The member `key`; a missing key is an error naming it.
  [[nodiscard]] JsonCursor operator[](std::string_view key) const;
  [[nodiscard]] std::optional<JsonCursor> find(std::string_view key) const;
  /// Rejects any member not in `allowed` (typos are errors, not silence).
  void allow_only(std::initializer_list<std::string_view> allowed) const;
  /// The same, for a list made at run time.
  void allow_only(std::span<const std::string_view> allowed) const;
  /// ConfigError at "format" unless this object's "format" is `format`.
  void require_format(std::string_view format) const;

  // Arrays.
  [[nodiscard]] std::size_t size() const;  // requires an array
  [[nodiscard]] JsonCursor at(std::size_t i) const;
  /// size(), refused past `max` ("has N <what>; at most M", docs/limits.md).
  [[nodiscard]] std::size_t size_at_most(std::size_t max, std::string_view what) const;
  /// Refuses an array whose element `key` (or, with an empty key, whose
  /// string elements) repeats: "<value> is also [i]'s" at the repeat.
  void require_unique(std::string_view key) const;

  // Scalars; each checks the JSON type and names the path on mismatch.
  [[nodiscard]] std::string as_string() const;
  /// A non-empty string (names, ids) of at most kMaxJsonName bytes.
  [[nodiscard]] std::string as_name() const;
  [[nodiscard]] std::int64_t as_int() const;
  [[nodiscard]] std::int64_t as_int_in(std::int64_t lo, std::int64_t hi) const;
  [[nodiscard]] double as_number() const;
  /// A number in [lo, hi] (JSON has no NaN or infinity).
  [[nodiscard]] double as_number_in(double lo, double hi) const;
  [[nodiscard]] bool as_bool() const;
  [[nodiscard]] Bytes as_bytes() const;
  [[nodiscard]] Bandwidth as_bandwidth() const;
  [[nodiscard]] Time as_time() const;

 private:
  void expect_object() const;
  void expect_array() const;
  // A member or element of this value, its path spelled out by appends (a
  // loader makes a cursor for every value it reads).
  JsonCursor(const Json& value, std::shared_ptr<const std::string> file, std::string path)
      : value_(&value), file_(std::move(file)), path_(std::move(path)) {}
  [[nodiscard]] std::string member_path(std::string_view key) const;
  const Json* value_;
  std::shared_ptr<const std::string> file_;  // shared by a document's cursors
  std::string path_;
};

/// Name of a JSON value's type for messages ("a string", "an array").
[[nodiscard]] std::string json_type_name(const Json& j);

}  // namespace meshsim
