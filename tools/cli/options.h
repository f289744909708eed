#pragma once
// Helpers for the commands' options: reading a value, and saying when an
// option the user gave can do nothing.

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::cli {

/// `parse(text)` (parse_bytes, parse_time, ...) for the text of option
/// `opt`: a ParseError becomes a UsageError naming the option.
template <typename Parse>
auto option_value(std::string_view opt, const std::string& text, Parse parse) -> decltype(parse(text)) {
  try {
    return parse(text);
  } catch (const ParseError& e) {
    throw UsageError(fmt::format("{}: {}", opt, e.what()));
  }
}

/// The check of a FLOAT option: a number from `lo` to `hi`, both written as
/// a person would (1e+15, not 1000000000000000.000000) in --help and in
/// the message that refuses another.
[[nodiscard]] CLI::Validator number_in(double lo, double hi);

/// For each (option, needed) pair: the warning that `option` has no effect
/// when `cmd` was given it but not `needed` ("--trace-detail has no effect
/// without --trace"), in the order of `pairs`. Options are named as
/// `cmd` knows them (their long name).
[[nodiscard]] std::vector<std::string> needless_options(
    const CLI::App& cmd, std::initializer_list<std::pair<std::string_view, std::string_view>> pairs);
/// Prints needless_options' warnings on stderr, one line each.
void warn_needless(const CLI::App& cmd,
                   std::initializer_list<std::pair<std::string_view, std::string_view>> pairs);

}  // namespace meshsim::cli
