#pragma once
// Writing a large JSON document without holding it whole: the document is
// given without its long arrays (an empty array in each one's place), and
// their elements are written one at a time where the arrays stand. The
// bytes are dump_json's for the whole document, so a reader, a diff or a
// test cannot tell the difference; the memory is the small document's and
// one element's.
//
//   JsonWriter w(out, Json{{"plan", name}, {"tasks", Json::array()}, {"makespan_us", m}});
//   w.begin_array("tasks");
//   for (...) w.add(task_json(...));
//   w.end_array();
//   w.finish();
//
// Only members of the top-level object can be streamed, in the order they
// stand in the document. A document that is one array is written an
// element at a time by JsonArrayWriter.

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

#include "core/json.h"

namespace meshsim {

class JsonWriter {
 public:
  JsonWriter(std::ostream& out, const Json& doc) : out_(out), text_(dump_json(doc)) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  /// Writes the document up to the top-level member `key` (an empty array
  /// in `doc`, after the last streamed one) and opens it.
  void begin_array(std::string_view key);
  /// One element of the open array, indented as dump_json indents it.
  void add(const Json& element);
  /// Closes the open array.
  void end_array();
  /// Writes the rest of the document.
  void finish();

 private:
  std::ostream& out_;
  std::string text_;          // dump_json of the document without the streamed elements
  std::size_t written_ = 0;   // text_ written so far
  std::size_t elements_ = 0;  // of the open array
  std::string element_;       // scratch for add
};

/// dump_json of an array, written an element at a time.
class JsonArrayWriter {
 public:
  explicit JsonArrayWriter(std::ostream& out) : out_(out) {}
  JsonArrayWriter(const JsonArrayWriter&) = delete;
  JsonArrayWriter& operator=(const JsonArrayWriter&) = delete;

  void add(const Json& element);
  /// Closes the array (and the document's last line).
  void finish();

 private:
  std::ostream& out_;
  std::size_t elements_ = 0;
  std::string element_;  // scratch for add
};

}  // namespace meshsim
