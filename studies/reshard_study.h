#pragma once
// Resharding studies (`meshsim.study/1`): a named set of resharding cases on
// one topology, run with a list of strategies and balancing modes.
//
// {"format": "meshsim.study/1", "name": ..., "description": ...,
//  "topology": file (relative to the study file) or preset,
//  "strategies": ["send-recv", "allgather", "broadcast", "signal", "auto"],
//  "balances": ["none", "device", "host-size", "host-order"],
//  "groups": [{"name": ..., "cases": [{"name", "tensor", "src_mesh",
//              "src_spec", "dst_mesh", "dst_spec"}, ...]}, ...]}
//
// Each row is one plan of a case (reshard::Method: its strategy and
// balancing, auto's search, or a redistribution); results.csv and
// results.json list them, the table view gives per case the best effective
// bandwidth of each strategy over its balancing modes beside the lower
// bound, and the chart draws the same per group (tools/plot_study.py).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "reshard/evaluate.h"
#include "reshard/reshard.h"
#include "studies/study.h"

namespace meshsim::studies {

struct ReshardCase {
  std::string group;
  std::string name;
  std::string tensor, src_mesh, src_spec, dst_mesh, dst_spec;
};

struct ReshardStudy {
  std::string name;
  std::string description;
  std::string topology;  // resolved path or preset name
  std::vector<reshard::Strategy> strategies;
  std::vector<reshard::Balance> balances;
  bool with_auto = false;
  std::vector<std::string> groups;
  std::vector<ReshardCase> cases;
};

/// ConfigError with the JSON path on any mistake.
[[nodiscard]] ReshardStudy load_reshard_study(const JsonCursor& root);
/// The registry's loader (studies/study.h).
[[nodiscard]] std::unique_ptr<Study> reshard_study_kind(const JsonCursor& root);

struct ReshardRow {
  std::string group, case_name;
  reshard::Method method;
  double time_s = 0;
  double effective_gbps = 0;  // tensor bits / time
  double lower_bound_s = 0;   // 0 when nothing crosses the network
  double network_bytes = 0;
  double speedup = 0;  // over send-recv with no balancing (0 if not run)
};

/// The rows of one case from its evaluated plans (evaluate_reshard).
[[nodiscard]] std::vector<ReshardRow> reshard_rows(const std::string& group, const std::string& case_name,
                                                   const reshard::ReshardProblem& p,
                                                   const reshard::LowerBound& lb,
                                                   const std::vector<reshard::ReshardOutcome>& outcomes);

/// Runs every case; `progress` (may be empty) is called after each case
/// with (done, total).
[[nodiscard]] std::vector<ReshardRow> run_reshard_study(
    const ReshardStudy& s, topology::Topology& t,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

/// The rows as results.csv and results.json list them.
[[nodiscard]] Results reshard_results(const std::vector<ReshardRow>& rows);

/// tools/plot_study.py's data: per case, the effective bandwidth (Gb/s) of
/// naive send-recv (no balancing), the best of each strategy over its
/// balancing modes, auto and signal, and the lower bound, taken from the
/// figures as results.csv rounds them, so that the chart and the file agree.
/// `group,case,series,value` lines.
[[nodiscard]] std::string reshard_chart_data(const std::vector<ReshardRow>& rows);

}  // namespace meshsim::studies
