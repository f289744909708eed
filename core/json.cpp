#include "core/json.h"

#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"
#include "core/unit_strings.h"

namespace meshsim {

bool has_format(const Json& j, std::string_view format) {
  return j.is_object() && j.contains("format") && j["format"].is_string() &&
         j["format"].get_ref<const std::string&>() == format;
}

Json read_json_file(const std::string& file) {
  return parse_json_text(read_input_file(file, "a JSON file"), file);
}

std::string dump_json(const Json& j) {
  return j.dump(2) + "\n";
}

std::string json_type_name(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

void JsonCursor::fail(const std::string& message) const {
  throw ConfigError(*file_, path_, message);
}

std::string JsonCursor::member_path(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  std::string p;
  p.reserve(path_.size() + 1 + key.size());
  p.append(path_).append(1, '.').append(key);
  return p;
}

void JsonCursor::expect_object() const {
  if (!value_->is_object()) fail(fmt::format("expected an object, got {}", json_type_name(*value_)));
}

void JsonCursor::expect_array() const {
  if (!value_->is_array()) fail(fmt::format("expected an array, got {}", json_type_name(*value_)));
}

bool JsonCursor::has(std::string_view key) const {
  expect_object();
  return value_->contains(key);
}

JsonCursor JsonCursor::operator[](std::string_view key) const {
  auto c = find(key);
  if (!c) fail(fmt::format("missing required key \"{}\"", key));
  return *c;
}

std::optional<JsonCursor> JsonCursor::find(std::string_view key) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonCursor(*it, file_, member_path(key));
}

void JsonCursor::allow_only(std::initializer_list<std::string_view> allowed) const {
  allow_only(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void JsonCursor::allow_only(std::span<const std::string_view> allowed) const {
  expect_object();
  for (const auto& [key, v] : value_->items()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || a == key;
    if (!ok) {
      std::string list;
      for (auto a : allowed) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
      JsonCursor(v, file_, member_path(key))
          .fail(fmt::format("unknown key \"{}\" (accepted here: {})", key, list));
    }
  }
}

std::size_t JsonCursor::size() const {
  expect_array();
  return value_->size();
}

std::size_t JsonCursor::size_at_most(std::size_t max, std::string_view what) const {
  const std::size_t n = size();
  if (n > max) fail(fmt::format("has {} {}; at most {} are allowed (docs/limits.md)", n, what, max));
  return n;
}

void JsonCursor::require_unique(std::string_view key) const {
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < size(); ++i) {
    const JsonCursor e = key.empty() ? at(i) : at(i)[key];
    if (!e.json().is_string()) continue;  // the reader names a wrong type where it reads the value
    const auto [it, fresh] = seen.emplace(e.json().get<std::string>(), i);
    if (!fresh)
      e.fail(fmt::format("\"{}\" is also {}[{}]'s: each must differ", it->first, path_, it->second));
  }
}

JsonCursor JsonCursor::at(std::size_t i) const {
  expect_array();
  MESHSIM_ASSERT(i < value_->size(), "JSON array index out of range");
  std::string p;
  p.reserve(path_.size() + 22);
  p.append(path_).append(1, '[').append(std::to_string(i)).append(1, ']');
  return JsonCursor((*value_)[i], file_, std::move(p));
}

std::string JsonCursor::as_string() const {
  if (!value_->is_string()) fail(fmt::format("expected a string, got {}", json_type_name(*value_)));
  return value_->get<std::string>();
}

std::string JsonCursor::as_name() const {
  std::string s = as_string();
  if (s.empty()) fail("must not be empty");
  if (s.size() > kMaxJsonName)
    fail(fmt::format("a name of {} bytes; names may have at most {} (docs/limits.md)", s.size(),
                     kMaxJsonName));
  return s;
}

std::int64_t JsonCursor::as_int() const {
  if (value_->is_number_unsigned()) {
    const auto u = value_->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail("integer is too large");
    return static_cast<std::int64_t>(u);
  }
  if (!value_->is_number_integer()) fail(fmt::format("expected an integer, got {}", json_type_name(*value_)));
  return value_->get<std::int64_t>();
}

std::int64_t JsonCursor::as_int_in(std::int64_t lo, std::int64_t hi) const {
  const std::int64_t v = as_int();
  if (v < lo || v > hi) fail(fmt::format("{} is out of range (expected {} to {})", v, lo, hi));
  return v;
}

double JsonCursor::as_number() const {
  if (!value_->is_number()) fail(fmt::format("expected a number, got {}", json_type_name(*value_)));
  return value_->get<double>();
}

double JsonCursor::as_number_in(double lo, double hi) const {
  const double v = as_number();
  if (!(v >= lo && v <= hi)) fail(fmt::format("{} is out of range (expected {:g} to {:g})", v, lo, hi));
  return v;
}

bool JsonCursor::as_bool() const {
  if (!value_->is_boolean()) fail(fmt::format("expected true or false, got {}", json_type_name(*value_)));
  return value_->get<bool>();
}

namespace {
template <typename F>
auto parse_unit_string(const JsonCursor& c, std::string_view what, F&& parse) {
  // A bare JSON number goes through the parser too, so that its message
  // lists the accepted units ("25" has no unit (expected ... "25GBps")).
  if (!c.json().is_string() && !c.json().is_number())
    c.fail(fmt::format("expected a {} string, got {}", what, json_type_name(c.json())));
  try {
    return parse(c.json().is_string() ? c.json().template get<std::string>() : c.json().dump());
  } catch (const ParseError& e) {
    c.fail(e.what());
  }
}
}  // namespace

Bytes JsonCursor::as_bytes() const {
  return parse_unit_string(*this, "size", [](const std::string& s) { return parse_bytes(s); });
}
Bandwidth JsonCursor::as_bandwidth() const {
  return parse_unit_string(*this, "rate", [](const std::string& s) { return parse_bandwidth(s); });
}
Time JsonCursor::as_time() const {
  return parse_unit_string(*this, "time", [](const std::string& s) { return parse_time(s); });
}

void JsonCursor::require_format(std::string_view format) const {
  const JsonCursor f = (*this)["format"];
  if (f.as_string() != format) f.fail(fmt::format("expected \"{}\"", format));
}

}  // namespace meshsim
