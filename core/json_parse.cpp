// parse_json_text: nlohmann's SAX parser (iterative) into a document built
// here, so that nesting deeper than kMaxJsonDepth and duplicate keys are
// ConfigErrors with the JSON path instead of a stack overflow or a silently
// dropped value.

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"

namespace meshsim {

namespace {

// 1-based line and column of byte offset `end` (nlohmann's positions count
// from 1; 0 is before the first byte).
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t end) {
  std::size_t line = 1;
  std::size_t col = 1;
  end = std::min(end, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

class Builder : public nlohmann::json_sax<Json> {
 public:
  Builder(std::string_view text, const std::string& file) : text_(text), file_(file) {}
  Json root;

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return value(v); }
  bool string(string_t& v) override { return value(std::move(v)); }
  bool binary(binary_t& v) override { return value(Json::binary(std::move(v))); }
  bool start_object(std::size_t /*size*/) override { return open(Json::object()); }
  bool start_array(std::size_t /*size*/) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  // One pass over the object's keys so far (an ordered map is a vector):
  // a duplicate is an error, else the key is appended with its value to
  // come. Room for a few keys at once: most objects of a plan or a
  // topology have 3-8, and growing one key at a time moves them thrice.
  bool key(string_t& k) override {
    auto& members = stack_.back().value->get_ref<Json::object_t&>();
    if (members.empty()) members.reserve(kFirstKeys);
    for (const auto& [have, v] : members)
      if (have == k)
        throw ConfigError(file_, path(), fmt::format("duplicate key \"{}\" (each key may appear once)", k));
    members.emplace_back(std::move(k), nullptr);
    key_ = &members.back().first;
    slot_ = &members.back().second;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) override {
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column 2: "
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    if (auto p = what.find("number overflow"); p != std::string::npos)
      throw ConfigError(file_, path(),
                        fmt::format("invalid JSON: {} (beyond a double's range)", what.substr(p)));
    const auto [line, col] = line_column(text_, position == 0 ? 0 : position - 1);
    throw ConfigError(file_, "", fmt::format("invalid JSON at line {}, column {}: {}", line, col, what));
  }

 private:
  // An open array or object, and where it sits in its parent: at `index`
  // of an array, or under `key` of an object (the root: neither). The path
  // is spelled out only for an error.
  struct Level {
    Json* value;
    std::size_t index;
    std::string key;
  };
  static constexpr std::size_t kNoIndex = SIZE_MAX;
  static constexpr std::size_t kFirstKeys = 8;

  // Where the next value goes.
  Json* place(Json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Json& parent = *stack_.back().value;
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool value(Json v) {
    (void)place(std::move(v));
    return true;
  }
  bool open(Json container) {
    if (stack_.size() >= kMaxJsonDepth)
      throw ConfigError(
          file_, path(),
          fmt::format("nested deeper than {} arrays and objects, the most a meshsim input may be",
                      kMaxJsonDepth));
    const bool in_array = !stack_.empty() && stack_.back().value->is_array();
    Json* slot = place(std::move(container));
    if (in_array)
      stack_.push_back({slot, stack_.back().value->size() - 1, {}});
    else
      stack_.push_back({slot, kNoIndex, stack_.empty() ? std::string() : *key_});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  [[nodiscard]] std::string path() const {
    std::string p;
    for (std::size_t i = 1; i < stack_.size(); ++i) {
      if (stack_[i].index != kNoIndex)
        p += fmt::format("[{}]", stack_[i].index);
      else
        p += (i > 1 ? "." : "") + stack_[i].key;
    }
    return p;
  }

  std::string_view text_;
  const std::string& file_;
  std::vector<Level> stack_;
  Json* slot_ = nullptr;              // where the value of the last key goes
  const std::string* key_ = nullptr;  // the last key (valid until the next one)
};

}  // namespace

Json parse_json_text(std::string_view text, const std::string& file) {
  Builder b(text, file);
  (void)Json::sax_parse(text, &b);
  return std::move(b.root);
}

}  // namespace meshsim
