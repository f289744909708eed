#include "tools/cli/options.h"

#include <cmath>

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

CLI::Validator number_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return fmt::format("{} is not a number", input);
        if (!std::isfinite(value)) return {};  // every FLOAT option refuses it (refuse_non_finite, main.cpp)
        if (!(value >= lo && value <= hi))
          return fmt::format("{} is out of range: from {:g} to {:g}", input, lo, hi);
        return {};
      },
      fmt::format("FLOAT in [{:g} - {:g}]", lo, hi));
}

}  // namespace meshsim::cli
