#include "planner/study.h"

#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "planner/reshard_eval.h"
#include "topology/cluster.h"
#include "topology/mesh.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

namespace meshsim::planner {

std::string file_beside(const std::string& file, const JsonCursor& c, std::string_view what) {
  std::string path = resolve_beside(file, c.as_name());
  if (path_kind(path) != PathKind::file) c.fail(fmt::format("no {} file {}", what, path));
  return path;
}

namespace {

ReshardProblem problem_of(const StudyCase& c, const topology::Topology& t) {
  return make_problem(t, parse_tensor_arg(c.tensor), c.src_mesh, c.src_spec, c.dst_mesh, c.dst_spec);
}

}  // namespace

topology::Topology load_study_topology(const std::string& what) {
  if (topology::find_host_preset(what) != nullptr) {
    topology::ClusterSpec spec;
    spec.host_preset = what;
    return topology::build_cluster(spec);
  }
  return topology::load_topology_file(what);
}

Study load_study(const std::string& file) {
  const Json j = read_json_file(file);
  const JsonCursor root(j, file);
  if (!j.is_object()) root.fail("a study is a JSON object");
  const JsonCursor f = root["format"];
  if (f.as_string() != "meshsim.study/1")
    f.fail(
        fmt::format("unsupported format \"{}\" (meshsim study reads meshsim.study/1, "
                    "meshsim.pipeline-study/1, meshsim.collective-study/1, "
                    "meshsim.redistribution-study/1 and meshsim.fidelity/1; docs/study-format.md)",
                    f.as_string()));
  root.allow_only({"format", "name", "description", "topology", "strategies", "balances", "groups"});
  Study s;
  s.name = root["name"].as_name();
  if (auto d = root.find("description")) s.description = d->as_string();
  const JsonCursor tc = root["topology"];
  s.topology = resolve_beside(file, tc.as_name());
  const JsonCursor strategies = root["strategies"];
  strategies.require_unique("");
  for (std::size_t i = 0; i < strategies.size(); ++i) {
    const std::string name = strategies.at(i).as_string();
    if (name == "auto") {
      s.with_auto = true;
    } else if (auto st = strategy_from(name)) {
      s.strategies.push_back(*st);
    } else {
      strategies.at(i).fail(
          fmt::format("unknown strategy \"{}\" ({} or auto)", name, fmt::join(kStrategyNames.names(), ", ")));
    }
  }
  const JsonCursor balances = root["balances"];
  balances.require_unique("");
  for (std::size_t i = 0; i < balances.size(); ++i) {
    const auto b = balance_from(balances.at(i).as_string());
    if (!b)
      balances.at(i).fail(
          fmt::format("unknown balancing mode \"{}\" (none, device, host-size, host-order, search)",
                      balances.at(i).as_string()));
    s.balances.push_back(*b);
  }
  if (s.balances.empty()) balances.fail("needs at least one balancing mode");
  const JsonCursor groups = root["groups"];
  groups.require_unique("name");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const JsonCursor gc = groups.at(g);
    gc.allow_only({"name", "cases"});
    s.groups.push_back(gc["name"].as_name());
    const JsonCursor cases = gc["cases"];
    cases.require_unique("name");
    for (std::size_t k = 0; k < cases.size_at_most(kMaxStudyCases, "cases"); ++k) {
      const JsonCursor c = cases.at(k);
      c.allow_only({"name", "tensor", "src_mesh", "src_spec", "dst_mesh", "dst_spec"});
      s.cases.push_back(StudyCase{s.groups.back(), c["name"].as_name(), c["tensor"].as_name(),
                                  c["src_mesh"].as_name(), c["src_spec"].as_name(), c["dst_mesh"].as_name(),
                                  c["dst_spec"].as_name()});
    }
  }
  if (s.cases.size() > kMaxStudyCases)
    groups.fail(fmt::format("hold {} cases in all; a study may have at most {} (docs/limits.md)",
                            s.cases.size(), kMaxStudyCases));
  return s;
}

std::vector<StudyRow> study_rows(const std::string& group, const std::string& case_name,
                                 const ReshardProblem& p, const LowerBound& lb,
                                 const std::vector<ReshardOutcome>& outcomes) {
  double baseline = 0;
  for (const auto& o : outcomes)
    if (o.name == "send-recv" && o.balance == "none") baseline = o.result.makespan.seconds();
  const double bits = static_cast<double>(p.tensor.bytes().count()) * 8;
  std::vector<StudyRow> rows;
  for (const auto& o : outcomes) {
    const double secs = o.result.makespan.seconds();
    rows.push_back(StudyRow{group, case_name, o.name, o.balance, secs, bits / secs / 1e9, lb.time.seconds(),
                            o.network_bytes, baseline > 0 ? baseline / secs : 0});
  }
  return rows;
}

std::vector<StudyRow> run_study(const Study& s, const topology::Topology& t,
                                const std::function<void(std::size_t, std::size_t)>& progress) {
  std::vector<StudyRow> rows;
  for (std::size_t k = 0; k < s.cases.size(); ++k) {
    const StudyCase& c = s.cases[k];
    ReshardProblem p;
    try {
      p = problem_of(c, t);
    } catch (const Error& e) {
      throw UsageError(fmt::format("study case \"{}\": {}", c.name, e.what()));
    }
    const auto tasks = unit_tasks(p);
    const LowerBound lb = lower_bound(t, p, tasks);
    const auto outcomes = evaluate_reshard(t, p, tasks, s.strategies, s.balances, s.with_auto);
    for (StudyRow& r : study_rows(c.group, c.name, p, lb, outcomes)) rows.push_back(std::move(r));
    if (progress) progress(k + 1, s.cases.size());
  }
  return rows;
}

std::string study_csv(const std::vector<StudyRow>& rows) {
  std::string out =
      "group,case,strategy,balance,time_s,effective_gbps,lower_bound_s,ratio_to_bound,network_bytes,speedup_"
      "vs_send_recv\n";
  for (const auto& r : rows)
    out += fmt::format("{},{},{},{},{:.9g},{:.6g},{:.9g},{:.4f},{:.0f},{:.4f}\n", r.group, r.case_name,
                       r.strategy, r.balance, r.time_s, r.effective_gbps, r.lower_bound_s,
                       r.lower_bound_s > 0 ? r.time_s / r.lower_bound_s : 0.0, r.network_bytes, r.speedup);
  return out;
}

Json study_json(const Study& s, const std::vector<StudyRow>& rows) {
  Json out = Json::array();
  for (const auto& r : rows)
    out.push_back(Json{{"group", r.group},
                       {"case", r.case_name},
                       {"strategy", r.strategy},
                       {"balance", r.balance},
                       {"time_s", r.time_s},
                       {"effective_gbps", r.effective_gbps},
                       {"lower_bound_s", r.lower_bound_s},
                       {"network_bytes", r.network_bytes},
                       {"speedup_vs_send_recv", r.speedup}});
  return Json{{"study", s.name}, {"topology", s.topology}, {"results", std::move(out)}};
}

}  // namespace meshsim::planner
