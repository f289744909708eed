#include "topology/xml_check.h"

#include <charconv>
#include <set>

#include <fmt/format.h>

namespace meshsim::topology {

namespace {

// XML 1.0's Char production.
bool xml_char(std::uint32_t c) {
  return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) ||
         (c >= 0x10000 && c <= 0x10FFFF);
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == ':' || static_cast<unsigned char>(c) >= 0x80;
}

class Scanner {
 public:
  Scanner(std::string_view text, int max_depth) : text_(text), max_depth_(max_depth) {}

  std::optional<std::string> run() {
    while (i_ < text_.size() && !problem_) {
      const std::string_view rest = text_.substr(i_);
      if (rest.starts_with("<!--")) {
        skip_to("-->");
      } else if (rest.starts_with("<![CDATA[")) {
        skip_to("]]>");
      } else if (rest.starts_with("<!DOCTYPE")) {
        fail(
            "a document type declaration (<!DOCTYPE ...>): NCCL topology dumps have none, and meshsim "
            "reads no DTDs or user-defined entities");
      } else if (rest.starts_with("<!")) {
        fail("an XML declaration \"<!\" other than a comment or CDATA");
      } else if (rest.starts_with("<?")) {
        skip_to("?>");
      } else if (rest.starts_with("</")) {
        --depth_;
        skip_to(">");
      } else if (rest[0] == '<') {
        start_tag();
      } else {
        character();
      }
    }
    return problem_;
  }

 private:
  void fail(const std::string& what) {
    if (!problem_) problem_ = fmt::format("line {}: {}", line_, what);
  }

  void skip_to(std::string_view end) {
    const std::size_t at = text_.find(end, i_);
    const std::size_t stop = at == std::string_view::npos ? text_.size() : at + end.size();
    while (i_ < stop && !problem_) plain(text_[i_++]);
  }

  // A character outside markup, or inside a comment: lines and control
  // characters are tracked everywhere.
  void plain(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') ++line_;
    if (u < 0x20 && c != '\n' && c != '\t' && c != '\r')
      fail(fmt::format("control character 0x{:02X}, which XML does not allow", u));
  }

  void character() {
    if (text_[i_] == '&') {
      reference();
    } else {
      plain(text_[i_++]);
    }
  }

  // An entity or character reference at i_ ('&').
  void reference() {
    const std::size_t end = text_.find(';', i_);
    const std::string_view ref =
        text_.substr(i_ + 1, end == std::string_view::npos ? 0 : std::min<std::size_t>(end - i_ - 1, 32));
    if (end == std::string_view::npos || end - i_ - 1 > 32 || ref.empty()) {
      fail("a '&' that starts no reference (write &amp; for the character)");
      return;
    }
    i_ = end + 1;
    if (ref == "lt" || ref == "gt" || ref == "amp" || ref == "quot" || ref == "apos") return;
    if (ref[0] != '#') {
      fail(fmt::format("unknown entity &{};: XML predefines only &lt; &gt; &amp; &quot; &apos;", ref));
      return;
    }
    const bool hex = ref.size() > 1 && ref[1] == 'x';
    const std::string_view digits = ref.substr(hex ? 2 : 1);
    std::uint32_t c = 0;
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), c, hex ? 16 : 10);
    if (digits.empty() || ec != std::errc{} || p != digits.data() + digits.size() || !xml_char(c))
      fail(fmt::format("character reference &{}; names no character XML allows", ref));
  }

  void start_tag() {
    ++i_;  // '<'
    std::set<std::string_view> seen;
    const std::size_t name_start = i_;
    while (i_ < text_.size() && name_char(text_[i_])) ++i_;
    const std::string_view element = text_.substr(name_start, i_ - name_start);
    char last = 0;
    while (i_ < text_.size() && !problem_) {
      const char c = text_[i_];
      if (c == '>') break;
      if (name_char(c)) {
        const std::size_t start = i_;
        while (i_ < text_.size() && name_char(text_[i_])) ++i_;
        const std::string_view attr = text_.substr(start, i_ - start);
        if (!seen.insert(attr).second)
          fail(fmt::format("attribute \"{}\" given twice in one <{}> element", attr, element));
        last = 0;
        continue;
      }
      if (c == '"' || c == '\'') {
        value(c);
        last = 0;
        continue;
      }
      plain(c);
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') last = c;
      ++i_;
    }
    ++i_;  // '>'
    if (last != '/' && ++depth_ > max_depth_)
      fail(fmt::format("elements nested deeper than {} levels; an NCCL topology dump is a few levels deep",
                       max_depth_));
  }

  // A quoted attribute value starting at i_.
  void value(char quote) {
    ++i_;
    while (i_ < text_.size() && text_[i_] != quote && !problem_) {
      if (text_[i_] == '<') {
        fail("a '<' inside an attribute value (write &lt;)");
        return;
      }
      character();
    }
    ++i_;
  }

  std::string_view text_;
  int max_depth_;
  std::size_t i_ = 0;
  int line_ = 1;
  int depth_ = 0;
  std::optional<std::string> problem_;
};

}  // namespace

std::optional<std::string> xml_problem(std::string_view text, int max_depth) {
  return Scanner(text, max_depth).run();
}

}  // namespace meshsim::topology
