#pragma once
// A training step's cost and energy (topology/cost.h) as the commands print
// them: table rows and a JSON object.

#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "topology/cost.h"

namespace meshsim::cli {

/// Dollars, three significant figures below $100 ("$0.412", "$12.3", "$1234").
[[nodiscard]] std::string dollars(double usd);

/// {"usd_per_step", "usd_per_million_tokens", "usd_per_gpu_hour",
/// "price_source", "kwh_per_step", "kwh_per_million_tokens", "watts",
/// "host_watts", "fabric_watts", "power_basis"}; a figure not known is null.
[[nodiscard]] Json cost_json(const topology::JobCost& job, const topology::StepCost& cost);

/// Rows "cost per step" and "energy per step" for a results table.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> cost_rows(const topology::JobCost& job,
                                                                         const topology::StepCost& cost);

}  // namespace meshsim::cli
