#pragma once
// Internal to topology/: the checks an XML text must pass before the
// property-tree parser (which is lenient) reads it. NCCL topology dumps are
// plain XML: elements, attributes, comments; no document type declaration,
// no entities beyond XML's five, no control characters.

#include <optional>
#include <string>
#include <string_view>

namespace meshsim::topology {

/// The first problem of `text` as "line N: what", or nothing. Checks:
/// control characters, `<!DOCTYPE` (and any other declaration but comments
/// and CDATA), an attribute given twice in one element, entity and
/// character references (only &lt; &gt; &amp; &quot; &apos; and numeric
/// references to characters XML allows), and nesting deeper than
/// `max_depth` elements. Malformed text it does not understand is left to
/// the parser, which reports it.
[[nodiscard]] std::optional<std::string> xml_problem(std::string_view text, int max_depth);

}  // namespace meshsim::topology
