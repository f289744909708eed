#include "tools/cli/options.h"

namespace meshsim::cli {

std::vector<std::string> needless_options(
    const CLI::App& cmd, std::initializer_list<std::pair<std::string_view, std::string_view>> pairs) {
  std::vector<std::string> out;
  for (const auto& [option, needed] : pairs)
    if (cmd.count(std::string(option)) > 0 && cmd.count(std::string(needed)) == 0)
      out.push_back(fmt::format("{} has no effect without {}", option, needed));
  return out;
}

void warn_needless(const CLI::App& cmd,
                   std::initializer_list<std::pair<std::string_view, std::string_view>> pairs) {
  for (const auto& w : needless_options(cmd, pairs)) fmt::print(stderr, "warning: {}\n", w);
}

}  // namespace meshsim::cli
