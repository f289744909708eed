#include <string>

#include <catch2/catch.hpp>

#include "core/error.h"

using meshsim::printable;

TEST_CASE("printable passes UTF-8 text, newlines and tabs unchanged", "[printable]") {
  CHECK(printable("plain ASCII: links[3].bandwidth") == "plain ASCII: links[3].bandwidth");
  CHECK(printable("line 1\n\tline 2") == "line 1\n\tline 2");
  // é (2 bytes), € (3 bytes), 😀 (4 bytes) are valid UTF-8.
  CHECK(printable("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") ==
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
}

TEST_CASE("printable escapes bytes that are not valid UTF-8 and control characters", "[printable]") {
  // A lone continuation byte, a byte that never occurs in UTF-8, a truncated
  // sequence at the end.
  CHECK(printable("last read: '\xFF'") == "last read: '\\xFF'");
  CHECK(printable("a\x80z") == "a\\x80z");
  CHECK(printable("\xE2\x82") == "\\xE2\\x82");
  // Overlong encodings and UTF-16 surrogates are not UTF-8 either.
  CHECK(printable("\xC0\xAF") == "\\xC0\\xAF");
  CHECK(printable("\xED\xA0\x80") == "\\xED\\xA0\\x80");
  // Escape (terminal control), carriage return, delete, NUL.
  CHECK(printable("\x1B[31mred") == "\\x1B[31mred");
  CHECK(printable("a\rb\x7F") == "a\\x0Db\\x7F");
  CHECK(printable(std::string("x\0y", 3)) == "x\\x00y");
}

TEST_CASE("printable cuts a long message in the middle and says how much", "[printable]") {
  const std::string value(5000, 'v');
  const std::string msg = "head " + value + " tail";
  const std::string out = printable(msg, 100);
  // 50 bytes of head, 25 of tail, and between them the count left out:
  // 5010 - 50 - 25 = 4935.
  CHECK(out ==
        "head " + std::string(45, 'v') + " [... 4935 bytes left out ...] " + std::string(20, 'v') + " tail");
  CHECK(printable(msg) == printable(msg, 2000));
  CHECK(printable(msg, std::string::npos) == msg);
}
