#include "core/json.h"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_writer.h"

using namespace meshsim;
using Catch::Matchers::Contains;

namespace {
// Runs f and returns the ConfigError it throws.
template <typename F>
ConfigError config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("expected a ConfigError");
  throw;  // unreachable
}
}  // namespace

TEST_CASE("JSON cursors name the path of a bad value", "[json]") {
  const Json j = parse_json_text(R"({"links": [{"bandwidth": "25GBps"}, {"bandwidth": "25GB"}]})", "t.json");
  const JsonCursor root(j, "t.json");
  CHECK(root["links"].at(0)["bandwidth"].as_bandwidth().bps() == 200'000'000'000);
  const ConfigError e = config_error([&] { (void)root["links"].at(1)["bandwidth"].as_bandwidth(); });
  CHECK(e.file() == "t.json");
  CHECK(e.json_path() == "links[1].bandwidth");
  CHECK_THAT(std::string(e.what()), Contains("t.json: links[1].bandwidth: \"25GB\""));
}

TEST_CASE("JSON cursors report missing keys, wrong types and unknown keys", "[json]") {
  const Json j = parse_json_text(R"({"a": 1, "b": "x", "c": {"latency": 5}})", "f.json");
  const JsonCursor root(j, "f.json");
  CHECK(config_error([&] { (void)root["missing"]; }).message() == "missing required key \"missing\"");
  CHECK(config_error([&] { (void)root["b"].as_int(); }).json_path() == "b");
  CHECK_THAT(config_error([&] { (void)root["a"].as_string(); }).message(), Contains("expected a string"));
  // A bare number where a time is required lists the time units.
  const ConfigError bare = config_error([&] { (void)root["c"]["latency"].as_time(); });
  CHECK(bare.json_path() == "c.latency");
  CHECK_THAT(bare.message(), Contains("has no unit") && Contains("us"));
  const ConfigError unknown = config_error([&] { root.allow_only({"a", "b"}); });
  CHECK(unknown.json_path() == "c");
  CHECK_THAT(unknown.message(), Contains("unknown key \"c\""));
  CHECK_THAT(config_error([&] { (void)root["a"].as_int_in(2, 5); }).message(), Contains("out of range"));
}

TEST_CASE("JSON lists may be bounded in length and required to name each thing once", "[json]") {
  const Json j = parse_json_text(
      R"({"cases": [{"name": "a"}, {"name": "b"}, {"name": "a"}], "modes": ["x", "y", "z"]})", "s.json");
  const JsonCursor root(j, "s.json");
  CHECK(root["modes"].size_at_most(3, "modes") == 3);
  const ConfigError many = config_error([&] { (void)root["modes"].size_at_most(2, "modes"); });
  CHECK(many.json_path() == "modes");
  CHECK(many.message() == "has 3 modes; at most 2 are allowed (docs/limits.md)");
  root["modes"].require_unique("");
  // The repeat is named at its own place, with the place it repeats.
  const ConfigError twice = config_error([&] { root["cases"].require_unique("name"); });
  CHECK(twice.json_path() == "cases[2].name");
  CHECK(twice.message() == "\"a\" is also cases[0]'s: each must differ");
  // Names are bounded: 4,096 bytes pass, one more does not.
  const Json names =
      Json{{"ok", std::string(kMaxJsonName, 'n')}, {"long", std::string(kMaxJsonName + 1, 'n')}};
  const JsonCursor nc(names, "n.json");
  CHECK(nc["ok"].as_name().size() == 4096);
  CHECK(config_error([&] { (void)nc["long"].as_name(); }).message() ==
        "a name of 4097 bytes; names may have at most 4096 (docs/limits.md)");
}

TEST_CASE("JSON syntax errors give line and column", "[json]") {
  const ConfigError e = config_error([] { (void)parse_json_text("{\n  \"a\": 1,\n  oops\n}", "bad.json"); });
  CHECK(e.file() == "bad.json");
  CHECK_THAT(e.message(), Contains("line 3"));
  CHECK_THAT(config_error([] { (void)read_json_file("/nonexistent/x.json"); }).message(),
             Contains("no such file"));
  // A directory or a device is refused before reading (a device could be endless).
  CHECK_THAT(config_error([] { (void)read_json_file("/tmp"); }).message(), Contains("is a directory"));
  CHECK_THAT(config_error([] { (void)read_json_file("/dev/zero"); }).message(),
             Contains("not a regular file"));
  // A number beyond a double's range is the file's mistake, not an internal error.
  CHECK_THAT(config_error([] { (void)parse_json_text(R"({"flops": 1e400})", "big.json"); }).message(),
             Contains("number overflow parsing '1e400'"));
}

TEST_CASE("JSON inputs are bounded: depth, duplicate keys, file size", "[json]") {
  // The document is built as parsed: values, nesting and order as written.
  const Json j = parse_json_text(R"({"a": [1, {"b": [true, null, "x"]}], "c": 2.5})", "ok.json");
  CHECK(j == Json::parse(R"({"a": [1, {"b": [true, null, "x"]}], "c": 2.5})"));
  // kMaxJsonDepth arrays nest; one more is refused with the path of the
  // innermost container that was accepted.
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  CHECK(parse_json_text(ok, "deep.json").is_array());
  const std::string deep =
      "{\"a\": " + std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "}";
  const ConfigError d = config_error([&] { (void)parse_json_text(deep, "deep.json"); });
  CHECK_THAT(d.message(), Contains("nested deeper than 100"));
  CHECK(d.json_path().rfind("a[0][0]", 0) == 0);
  // 200,000 levels: refused, not a stack overflow.
  const std::string huge = std::string(200000, '[') + std::string(200000, ']');
  CHECK_THAT(config_error([&] { (void)parse_json_text(huge, "huge.json"); }).message(),
             Contains("nested deeper"));
  // A key twice in one object: the path of that object and the key.
  const ConfigError dup =
      config_error([] { (void)parse_json_text(R"({"x": [0, {"c": 2, "c": 3}], "y": 1})", "dup.json"); });
  CHECK(dup.json_path() == "x[1]");
  CHECK_THAT(dup.message(), Contains("duplicate key \"c\""));
  CHECK(config_error([] { (void)parse_json_text(R"({"f": 1, "f": 1})", "dup.json"); }).json_path().empty());
  CHECK(config_error([] {
          (void)parse_json_text(R"({"x": {"y": [3, {"c": 1, "c": 2}]}})", "dup.json");
        }).json_path() == "x.y[1]");
  // The same key in two objects is fine.
  CHECK(parse_json_text(R"([{"k": 1}, {"k": 2}])", "ok.json").size() == 2);
  // A file over kMaxInputFileBytes is refused before it is read.
  const std::string big = "/tmp/meshsim_json_test_big.json";
  {
    std::FILE* f = std::fopen(big.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fseek(f, static_cast<long>(kMaxInputFileBytes), SEEK_SET) == 0);
    REQUIRE(std::fputc(' ', f) != EOF);
    std::fclose(f);
  }
  CHECK_THAT(config_error([&] { (void)read_json_file(big); }).message(), Contains("at most 64 MiB"));
  std::remove(big.c_str());
}

TEST_CASE("JsonWriter writes dump_json's bytes with its arrays streamed an element at a time", "[json]") {
  const Json head{{"name", "x"},
                  {"tasks", Json::array()},
                  {"nested", Json{{"tasks", Json::array()}}},  // the same key deeper: not the streamed one
                  {"empty", Json::array()},
                  {"links", Json::array()},
                  {"end", "a \"quoted\"\nline"}};
  const std::vector<Json> tasks{
      Json{{"id", "t0"}, {"devices", Json::array({0, 1})}},
      Json{{"id", "t1"}, {"regions", Json::array({Json{{"a", 1}}, Json::array()})}}};
  const std::vector<Json> links{Json(3), Json("l")};
  Json whole = head;
  whole["tasks"] = tasks;
  whole["links"] = links;
  std::ostringstream out;
  JsonWriter w(out, head);
  w.begin_array("tasks");
  for (const Json& t : tasks) w.add(t);
  w.end_array();
  w.begin_array("empty");  // opened and closed with nothing in it
  w.end_array();
  w.begin_array("links");
  for (const Json& l : links) w.add(l);
  w.end_array();
  w.finish();
  CHECK(out.str() == dump_json(whole));
}

TEST_CASE("JsonArrayWriter writes dump_json's bytes of an array an element at a time", "[json]") {
  const Json whole =
      Json::array({Json{{"args", Json::array({"a", "b"})}, {"result", Json{{"x", 1}}}}, Json(2)});
  std::ostringstream out;
  JsonArrayWriter w(out);
  for (const Json& e : whole) w.add(e);
  w.finish();
  CHECK(out.str() == dump_json(whole));
  std::ostringstream none;
  JsonArrayWriter empty(none);
  empty.finish();
  CHECK(none.str() == dump_json(Json::array()));
}
