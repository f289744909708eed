#pragma once
// Collective study files (`meshsim.collective-study/1`): published
// nccl-tests figures beside meshsim's prediction for the same machine,
// collective and size, each with the tolerance it must stay within.
//
// {"format": "meshsim.collective-study/1", "name": ..., "description": ...,
//  "rows": [{"name": ..., "machine": {cluster form of a topology file:
//              "host", "hosts", "fabric", "nic_bandwidth", ...},
//            "routing": "ecmp" | "adaptive" (optional),
//            "op": "allreduce", "size": "1GiB",
//            "algorithm": "auto" | "ring" | ..., "protocol": "auto" | ...,
//            "published": {"busbw_GBps": 480} or {"time_us": 62},
//            "tolerance": 0.10, "source": "where the figure was published"}]}
// The collective runs over every GPU of the machine, as nccl-tests does.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "plan/collective.h"
#include "studies/study.h"
#include "topology/cluster.h"

namespace meshsim::studies {

struct CollectiveStudyRow {
  std::string name;
  topology::ClusterSpec machine;
  topology::RoutingPolicy routing = topology::RoutingPolicy::ecmp;
  plan::CollectiveOp op = plan::CollectiveOp::all_reduce;
  Bytes size;
  std::optional<plan::Algorithm> algorithm;
  std::optional<plan::Protocol> protocol;
  bool published_is_time = false;  // time_us, else busbw_GBps
  double published = 0;
  double tolerance = 0.1;  // |predicted / published - 1| allowed
  std::string source;
};

struct CollectiveStudy {
  std::string name;
  std::string description;
  std::vector<CollectiveStudyRow> rows;
};

/// ConfigError with the JSON path on any mistake.
[[nodiscard]] CollectiveStudy load_collective_study(const JsonCursor& root);
/// The registry's loader (studies/study.h): the report fails when a row
/// leaves its tolerance.
[[nodiscard]] std::unique_ptr<Study> collective_study_kind(const JsonCursor& root);

struct CollectiveStudyResult {
  double predicted = 0;  // in the published figure's unit
  double error = 0;      // predicted / published - 1
  bool within = false;   // |error| <= tolerance
  std::string chosen;    // "algorithm/protocol/channels"
};

/// Simulates one row.
[[nodiscard]] CollectiveStudyResult run_collective_row(const CollectiveStudyRow& row);

/// The unit a row's figures are in: "us" or "GB/s busbw".
[[nodiscard]] std::string_view published_unit(const CollectiveStudyRow& row);
/// One row per study row: name, op, size_bytes (results.csv only), chosen,
/// unit, predicted, published, error, tolerance, within, source.
[[nodiscard]] Results collective_results(const CollectiveStudy& s,
                                         const std::vector<CollectiveStudyResult>& results);

}  // namespace meshsim::studies
