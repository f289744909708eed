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

void JsonWriter::add(const Json& element) {
  // Inside the top-level object's array, the element's lines are indented
  // by four more spaces than when it is dumped alone.
  const std::string alone = element.dump(2);
  element_.clear();
  element_ += elements_++ == 0 ? "\n    " : ",\n    ";
  for (char c : alone) {
    element_ += c;
    if (c == '\n') element_ += "    ";
  }
  out_ << element_;
}

void JsonWriter::end_array() {
  out_ << (elements_ == 0 ? "]" : "\n  ]");
}

void JsonWriter::finish() {
  out_.write(text_.data() + written_, static_cast<std::streamsize>(text_.size() - written_));
  written_ = text_.size();
}

}  // namespace meshsim
