#include "core/json_writer.h"

#include "core/error.h"

namespace meshsim {

void JsonWriter::begin_array(std::string_view key) {
  // dump_json puts each top-level member on a line of its own, indented by
  // two spaces (deeper members by more), and escapes newlines in strings:
  // this text occurs once, where the member stands.
  std::string member = "\n  ";
  member += Json(std::string(key)).dump();
  member += ": []";
  const std::size_t at = text_.find(member, written_);
  MESHSIM_ASSERT(at != std::string::npos, "a streamed array stands in the document as an empty array");
  const std::size_t open = at + member.size() - 1;  // the ']'
  out_.write(text_.data() + written_, static_cast<std::streamsize>(open - written_));
  written_ = open + 1;
  elements_ = 0;
}

namespace {

// An element of an array whose elements stand `indent` deep in the
// document: dump_json puts it on a line of its own, after a comma unless it
// is the first, with every line of it indented as deep.
void write_element(std::ostream& out, const Json& element, bool first, std::string_view indent,
                   std::string& scratch) {
  const std::string alone = element.dump(2);
  scratch.clear();
  scratch += first ? "\n" : ",\n";
  scratch += indent;
  for (char c : alone) {
    scratch += c;
    if (c == '\n') scratch += indent;
  }
  out << scratch;
}

}  // namespace

void JsonWriter::add(const Json& element) {
  write_element(out_, element, elements_++ == 0, "    ", element_);  // in the top-level object's array
}

void JsonWriter::end_array() {
  out_ << (elements_ == 0 ? "]" : "\n  ]");
}

void JsonWriter::finish() {
  out_.write(text_.data() + written_, static_cast<std::streamsize>(text_.size() - written_));
  written_ = text_.size();
}

void JsonArrayWriter::add(const Json& element) {
  if (elements_ == 0) out_ << '[';
  write_element(out_, element, elements_++ == 0, "  ", element_);
}

void JsonArrayWriter::finish() {
  out_ << (elements_ == 0 ? "[]\n" : "\n]\n");
}

}  // namespace meshsim
