#include "studies/reshard_study.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/table.h"
#include "sim/calibrate_apply.h"
#include "topology/placement.h"
#include "topology/topology.h"

namespace meshsim::studies {

using reshard::Balance;
using reshard::Method;
using reshard::Strategy;

ReshardStudy load_reshard_study(const JsonCursor& root) {
  const std::string& file = root.file();
  root.require_format("meshsim.study/1");
  root.allow_only({"format", "name", "description", "topology", "strategies", "balances", "groups"});
  ReshardStudy s;
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
    } else if (auto st = reshard::strategy_from(name)) {
      s.strategies.push_back(*st);
    } else {
      strategies.at(i).fail(fmt::format("unknown strategy \"{}\" ({} or auto)", name,
                                        fmt::join(reshard::kStrategyNames.names(), ", ")));
    }
  }
  const JsonCursor balances = root["balances"];
  balances.require_unique("");
  for (std::size_t i = 0; i < balances.size(); ++i) {
    const auto b = reshard::balance_from(balances.at(i).as_string());
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
      s.cases.push_back(ReshardCase{s.groups.back(), c["name"].as_name(), c["tensor"].as_name(),
                                    c["src_mesh"].as_name(), c["src_spec"].as_name(), c["dst_mesh"].as_name(),
                                    c["dst_spec"].as_name()});
    }
  }
  if (s.cases.size() > kMaxStudyCases)
    groups.fail(fmt::format("hold {} cases in all; a study may have at most {} (docs/limits.md)",
                            s.cases.size(), kMaxStudyCases));
  return s;
}

namespace {

reshard::ReshardProblem problem_of(const ReshardCase& c, const topology::Topology& t) {
  return reshard::make_problem(t, reshard::parse_tensor_arg(c.tensor), c.src_mesh, c.src_spec, c.dst_mesh,
                               c.dst_spec);
}

}  // namespace

std::vector<ReshardRow> reshard_rows(const std::string& group, const std::string& case_name,
                                     const reshard::ReshardProblem& p, const reshard::LowerBound& lb,
                                     const std::vector<reshard::ReshardOutcome>& outcomes) {
  double baseline = 0;
  for (const auto& o : outcomes)
    if (o.method.is(Strategy::send_recv, Balance::none)) baseline = o.result.makespan.seconds();
  const double bits = static_cast<double>(p.tensor.bytes().count()) * 8;
  std::vector<ReshardRow> rows;
  for (const auto& o : outcomes) {
    const double secs = o.result.makespan.seconds();
    rows.push_back(ReshardRow{group, case_name, o.method, secs, bits / secs / 1e9, lb.time.seconds(),
                              o.network_bytes, baseline > 0 ? baseline / secs : 0});
  }
  return rows;
}

std::vector<ReshardRow> run_reshard_study(const ReshardStudy& s, topology::Topology& t,
                                          const std::function<void(std::size_t, std::size_t)>& progress) {
  std::vector<ReshardRow> rows;
  for (std::size_t k = 0; k < s.cases.size(); ++k) {
    const ReshardCase& c = s.cases[k];
    reshard::ReshardProblem p;
    try {
      (void)topology::place_selected(t, {c.src_mesh, c.dst_mesh});  // a topology file's placement, per case
      p = problem_of(c, t);
    } catch (const Error& e) {
      throw UsageError(fmt::format("study case \"{}\": {}", c.name, e.what()));
    }
    const auto tasks = reshard::unit_tasks(p);
    const reshard::LowerBound lb = reshard::lower_bound(t, p, tasks);
    const auto outcomes = reshard::evaluate_reshard(t, p, tasks, s.strategies, s.balances, s.with_auto);
    for (ReshardRow& r : reshard_rows(c.group, c.name, p, lb, outcomes)) rows.push_back(std::move(r));
    if (progress) progress(k + 1, s.cases.size());
  }
  return rows;
}

Results reshard_results(const std::vector<ReshardRow>& rows) {
  Results out({{"group"},
               {"case"},
               {"strategy"},
               {"balance"},
               {"time_s", CsvFormat::general9},
               {"effective_gbps", CsvFormat::general6},
               {"lower_bound_s", CsvFormat::general9},
               {"ratio_to_bound", CsvFormat::fixed4, false},
               {"network_bytes", CsvFormat::fixed0},
               {"speedup_vs_send_recv", CsvFormat::fixed4}});
  for (const auto& r : rows)
    out.add({r.group, r.case_name, r.method.name(), r.method.balance_name(), r.time_s, r.effective_gbps,
             r.lower_bound_s, r.lower_bound_s > 0 ? r.time_s / r.lower_bound_s : 0.0, r.network_bytes,
             r.speedup});
  return out;
}

namespace {

// A figure as results.csv writes it, read back: what the chart draws.
double as_written(const char* format, double v) {
  return std::strtod(fmt::format(fmt::runtime(format), v).c_str(), nullptr);
}

// The entry of `list` keyed `key`, added at the end when new: groups and
// cases in the order the rows first name them.
template <typename T>
T& entry(std::vector<std::pair<std::string, T>>& list, const std::string& key) {
  auto at = std::find_if(list.begin(), list.end(), [&](const auto& x) { return x.first == key; });
  if (at == list.end()) at = list.insert(list.end(), {key, T{}});
  return at->second;
}

// One case's chart: each series' value (the best over its rows), and "bound".
using ChartCell = std::map<std::string, double>;

void keep_max(ChartCell& cell, const std::string& series, double v) {
  auto [at, fresh] = cell.try_emplace(series, v);
  if (!fresh) at->second = std::max(at->second, v);
}

}  // namespace

std::string reshard_chart_data(const std::vector<ReshardRow>& rows) {
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, ChartCell>>>> groups;
  for (const auto& r : rows) {
    ChartCell& cell = entry(entry(groups, r.group), r.case_name);
    const double gbps = as_written("{:.6g}", r.effective_gbps);
    const double time = as_written("{:.9g}", r.time_s);
    const double bound = as_written("{:.9g}", r.lower_bound_s);
    keep_max(cell, r.method.is(Strategy::send_recv, Balance::none) ? "send-recv (naive)" : r.method.name(),
             gbps);
    if (r.method.kind == Method::Kind::strategy && r.method.strategy == Strategy::send_recv)
      keep_max(cell, "send-recv", gbps);
    if (bound > 0 && time > 0) cell["bound"] = gbps * time / bound;
  }
  std::string out = "group,case,series,value\n";
  for (const auto& [group, cases] : groups)
    for (const auto& [name, cell] : cases)
      for (const auto& [series, value] : cell)
        out += fmt::format("{},{},{},{}\n", csv_quoted(group), csv_quoted(name), csv_quoted(series), value);
  return out;
}

namespace {

// The table's columns: each strategy the study plans (send-recv and
// broadcast also without balancing), then auto and signal.
std::vector<std::string> table_columns(const ReshardStudy& s) {
  std::vector<std::string> cols;
  for (Strategy st : reshard::kMovingStrategies) {
    if (std::find(s.strategies.begin(), s.strategies.end(), st) == s.strategies.end()) continue;
    const std::string name(reshard::to_string(st));
    if (st == Strategy::send_recv || st == Strategy::broadcast) cols.push_back(name + " (naive)");
    cols.push_back(st == Strategy::allgather ? "allgather (Alpa)" : name);
  }
  if (s.with_auto) cols.push_back("auto");
  if (std::find(s.strategies.begin(), s.strategies.end(), Strategy::signal) != s.strategies.end())
    cols.push_back("signal");
  return cols;
}

// The column of the table a row's plan counts in.
std::string table_column(const Method& m) {
  if (m.is(Strategy::send_recv, Balance::none)) return "send-recv (naive)";
  if (m.kind == Method::Kind::strategy && m.strategy == Strategy::allgather) return "allgather (Alpa)";
  return m.name();
}

// One group's table: per case, the best effective bandwidth of each column.
std::string group_table(const ReshardStudy& s, const std::string& group,
                        const std::vector<ReshardRow>& rows) {
  std::map<std::string, std::map<std::string, double>> best;  // case -> column -> Gbps
  std::vector<std::string> order;
  std::map<std::string, double> bound, speedup;
  for (const auto& r : rows) {
    if (r.group != group) continue;
    if (!best.contains(r.case_name)) order.push_back(r.case_name);
    auto& cell = best[r.case_name][table_column(r.method)];
    cell = std::max(cell, r.effective_gbps);
    if (r.method.is(Strategy::broadcast, Balance::none))
      best[r.case_name]["broadcast (naive)"] = r.effective_gbps;
    if (r.lower_bound_s > 0) bound[r.case_name] = r.effective_gbps * r.time_s / r.lower_bound_s;
    if (r.method.kind == Method::Kind::automatic) speedup[r.case_name] = r.speedup;
  }
  const std::vector<std::string> cols = table_columns(s);
  std::vector<std::string> header{"case", "bound"};
  header.insert(header.end(), cols.begin(), cols.end());
  header.push_back("auto speedup");
  Table tab(header);
  for (const auto& c : order) {
    std::vector<std::string> cells{c, bound.contains(c) ? fmt::format("{:.2f}", bound[c]) : std::string("-")};
    for (const auto& col : cols)
      cells.push_back(best[c].contains(col) ? fmt::format("{:.2f}", best[c][col]) : std::string("-"));
    cells.push_back(speedup.contains(c) ? fmt::format("{:.2f}x", speedup[c]) : std::string("-"));
    tab.add(cells);
  }
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  return fmt::format("\n{}\n{}", group, tab.render(right));
}

class ReshardStudyRun final : public Study {
 public:
  explicit ReshardStudyRun(ReshardStudy s) : s_(std::move(s)) {}

  Report run(const Context& c) const override {
    topology::Topology topo = load_study_topology(s_.topology);
    if (c.calibration != nullptr) sim::apply_links(*c.calibration, topo, c.calibration_file);
    const auto rows = run_reshard_study(s_, topo, c.progress_of("study " + s_.name, "cases"));
    Report r;
    r.results = reshard_results(rows);
    r.document = Json{{"study", s_.name}, {"topology", s_.topology}, {"results", r.results.json()}};
    r.text = fmt::format(
        "{}: {}\ntopology {}\neffective bandwidth (Gb/s: tensor bits / time), speedup of auto over naive "
        "send-recv\n",
        s_.name, s_.description, topo.name);
    for (const auto& group : s_.groups) r.text += group_table(s_, group, rows);
    r.chart = Chart{"plot_study.py", reshard_chart_data(rows)};
    r.files_line = {true, true, false, " and bar charts (PNG)",
                    " (plots skipped: python3-matplotlib missing?)"};
    return r;
  }

 private:
  ReshardStudy s_;
};

}  // namespace

std::unique_ptr<Study> reshard_study_kind(const JsonCursor& root) {
  return std::make_unique<ReshardStudyRun>(load_reshard_study(root));
}

}  // namespace meshsim::studies
