#pragma once
// One table of names per enum, written once beside the enum and read by
// its to_string, its parser, the JSON loaders and the CLI's validators:
//
//   inline constexpr EnumNames<Fabric, 2> kFabricNames{"fabric", {{{Fabric::a, "a"}, {Fabric::b, "b"}}}};
//   kFabricNames.name(Fabric::a) == "a";  kFabricNames.parse("b") == Fabric::b;
//   kFabricNames.names() == {"a", "b"};   kFabricNames.list() == "a or b"
//
// A value may have several entries (aliases); its first entry is its name.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace meshsim {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

template <typename E, std::size_t N>
class EnumNames {
 public:
  constexpr EnumNames(std::string_view what, std::array<EnumName<E>, N> entries)
      : what_(what), entries_(entries) {}

  /// What the enum names, for messages ("schedule", "link kind").
  [[nodiscard]] constexpr std::string_view what() const { return what_; }

  [[nodiscard]] constexpr std::string_view name(E v) const {
    for (const auto& e : entries_)
      if (e.value == v) return e.name;
    return "?";
  }

  [[nodiscard]] constexpr std::optional<E> parse(std::string_view s) const {
    for (const auto& e : entries_)
      if (e.name == s) return e.value;
    return std::nullopt;
  }

  /// Every value's name (aliases left out), in table order.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < N; ++i)
      if (name(entries_[i].value) == entries_[i].name) out.emplace_back(entries_[i].name);
    return out;
  }

  /// Every alias (entries after a value's first), in table order.
  [[nodiscard]] std::vector<std::string> aliases() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < N; ++i)
      if (name(entries_[i].value) != entries_[i].name) out.emplace_back(entries_[i].name);
    return out;
  }

  /// "a, b or c": the names for a message.
  [[nodiscard]] std::string list() const {
    const auto all = names();
    std::string out;
    for (std::size_t i = 0; i < all.size(); ++i)
      out += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i];
    return out;
  }

 private:
  std::string_view what_;
  std::array<EnumName<E>, N> entries_;
};

}  // namespace meshsim
