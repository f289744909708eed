#pragma once
// Study files (`meshsim.study/1`): a named set of resharding cases on one
// topology, run with a list of strategies and balancing modes.
//
// {"format": "meshsim.study/1", "name": ..., "description": ...,
//  "topology": file (relative to the study file) or preset,
//  "strategies": ["send-recv", "allgather", "broadcast", "signal", "auto"],
//  "balances": ["none", "device", "host-size", "host-order"],
//  "groups": [{"name": ..., "cases": [{"name", "tensor", "src_mesh",
//              "src_spec", "dst_mesh", "dst_spec"}, ...]}, ...]}

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/input_file.h"  // resolve_beside: topologies and models are named relative to the study
#include "core/json.h"
#include "planner/reshard.h"
#include "planner/reshard_eval.h"

namespace meshsim::planner {

/// The file a study names at `c` (a JSON string), resolved beside the study
/// `file`; fails at `c` ("no calibration file …", with `what`) when there is
/// no such file.
[[nodiscard]] std::string file_beside(const std::string& file, const JsonCursor& c, std::string_view what);

/// Cases (rows) one study file may hold, of any study format (docs/limits.md).
inline constexpr std::size_t kMaxStudyCases = 10'000;

struct StudyCase {
  std::string group;
  std::string name;
  std::string tensor, src_mesh, src_spec, dst_mesh, dst_spec;
};

struct Study {
  std::string name;
  std::string description;
  std::string topology;  // resolved path or preset name
  std::vector<Strategy> strategies;
  std::vector<Balance> balances;
  bool with_auto = false;
  std::vector<std::string> groups;
  std::vector<StudyCase> cases;
};

/// A study's topology: a host preset name (one host), else a topology file.
[[nodiscard]] topology::Topology load_study_topology(const std::string& what);

/// ConfigError with the JSON path on any mistake, including cases whose
/// meshes or specs do not fit the topology.
[[nodiscard]] Study load_study(const std::string& file);

struct StudyRow {
  std::string group, case_name, strategy, balance;
  double time_s = 0;
  double effective_gbps = 0;  // tensor bits / time
  double lower_bound_s = 0;   // 0 when nothing crosses the network
  double network_bytes = 0;
  double speedup = 0;  // over send-recv with no balancing (0 if not run)
};

/// The rows of one case from its evaluated plans (evaluate_reshard).
[[nodiscard]] std::vector<StudyRow> study_rows(const std::string& group, const std::string& case_name,
                                               const ReshardProblem& p, const LowerBound& lb,
                                               const std::vector<ReshardOutcome>& outcomes);

/// Runs every case; `progress` (may be empty) is called after each case
/// with (done, total).
[[nodiscard]] std::vector<StudyRow> run_study(
    const Study& s, const topology::Topology& t,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

[[nodiscard]] std::string study_csv(const std::vector<StudyRow>& rows);
[[nodiscard]] Json study_json(const Study& s, const std::vector<StudyRow>& rows);

}  // namespace meshsim::planner
