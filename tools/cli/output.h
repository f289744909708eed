#pragma once
// Writing the files the CLI produces (plans, traces, CSV, JSON).

#include <string>

namespace meshsim::cli {

/// Writes `text` to `path`; UsageError naming the path when it cannot.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace meshsim::cli
