#pragma once
// The links that bound a simulated run, as `collective`, `simulate` and
// `reshard` print them: utilisation = bytes / (capacity × makespan), so a
// link at 100 % was busy for the whole run and nothing could have finished
// sooner without it.

#include <cstddef>
#include <string>

#include "core/json.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::cli {

/// [{"link": "a->b", "kind": "network", "utilisation": 0.97, "bytes": ...}, ...]
[[nodiscard]] Json bottlenecks_json(const topology::Topology& t, const sim::SimResult& r, std::size_t k);
/// A table: link, kind, utilisation, bytes (empty string when nothing moved).
[[nodiscard]] std::string bottlenecks_table(const topology::Topology& t, const sim::SimResult& r,
                                            std::size_t k);

}  // namespace meshsim::cli
