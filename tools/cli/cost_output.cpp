#include "tools/cli/cost_output.h"

#include <fmt/format.h>

namespace meshsim::cli {

std::string dollars(double usd) {
  return usd >= 100 ? fmt::format("${:.0f}", usd) : fmt::format("${:.3g}", usd);
}

namespace {
template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}
}  // namespace

Json cost_json(const topology::JobCost& job, const topology::StepCost& cost) {
  return Json{{"usd_per_step", or_null(cost.usd_per_step)},
              {"usd_per_million_tokens", or_null(cost.usd_per_million_tokens)},
              {"usd_per_gpu_hour", or_null(job.usd_per_gpu_hour)},
              {"price_source", job.price_source},
              {"kwh_per_step", cost.kwh_per_step},
              {"kwh_per_million_tokens", or_null(cost.kwh_per_million_tokens)},
              {"watts", job.watts()},
              {"host_watts", job.host_watts},
              {"fabric_watts", job.fabric_watts},
              {"power_basis", job.power_basis}};
}

std::vector<std::pair<std::string, std::string>> cost_rows(const topology::JobCost& job,
                                                           const topology::StepCost& cost) {
  std::vector<std::pair<std::string, std::string>> rows;
  if (cost.usd_per_step) {
    const std::string per_tokens =
        cost.usd_per_million_tokens
            ? fmt::format(", {} per million tokens", dollars(*cost.usd_per_million_tokens))
            : std::string();
    rows.emplace_back("cost per step",
                      fmt::format("{}{} ({} GPUs at {}/GPU-hour, {})", dollars(*cost.usd_per_step),
                                  per_tokens, job.gpus, dollars(*job.usd_per_gpu_hour), job.price_source));
  } else {
    rows.emplace_back("cost per step", "unknown (no price for these hosts: --gpu-hour-price)");
  }
  if (job.watts() <= 0) {
    rows.emplace_back("energy per step", "unknown (no rated power for these hosts: --host-watts)");
    return rows;
  }
  const std::string per_tokens = cost.kwh_per_million_tokens ? fmt::format(", {:.3g} kWh per million tokens",
                                                                           *cost.kwh_per_million_tokens)
                                                             : std::string();
  rows.emplace_back("energy per step", fmt::format("{:.3g} kWh{} ({:.3g} kW: {})", cost.kwh_per_step,
                                                   per_tokens, job.watts() / 1e3, job.power_basis));
  return rows;
}

}  // namespace meshsim::cli
