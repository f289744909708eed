#include "core/enum_names.h"

#include <catch2/catch.hpp>

using namespace meshsim;

namespace {
enum class Colour { red, green, blue };
// green has an alias, "lime"; blue comes first in the table.
constexpr EnumNames<Colour, 4> kColours{
    "colour",
    {{{Colour::blue, "blue"}, {Colour::red, "red"}, {Colour::green, "green"}, {Colour::green, "lime"}}}};
}  // namespace

TEST_CASE("one name table drives names, parsing and the lists validators show", "[enum-names]") {
  static_assert(kColours.name(Colour::red) == "red");
  static_assert(kColours.parse("lime") == Colour::green);
  CHECK(kColours.name(Colour::green) == "green");  // the first entry, not the alias
  CHECK(kColours.parse("blue") == Colour::blue);
  CHECK_FALSE(kColours.parse("Blue"));
  CHECK(kColours.names() == std::vector<std::string>{"blue", "red", "green"});
  CHECK(kColours.aliases() == std::vector<std::string>{"lime"});
  CHECK(kColours.list() == "blue, red or green");
  CHECK(kColours.what() == "colour");
}
