// Redistribution studies (studies/redistribution_study.h).

#include "studies/redistribution_study.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/table.h"
#include "reshard/redistribute/evaluate.h"
#include "reshard/reshard.h"
#include "runtime/host_backend.h"
#include "topology/topology_json.h"

namespace meshsim::studies {

using namespace reshard::redistribute;  // this study is of its plans

namespace {

constexpr const char* kFormat = "meshsim.redistribution-study/1";

// The group's problems at both sizes (every pair starts from R...R and
// swaps in its types); ConfigError at `c` when they do not fit.
std::pair<Problem, Problem> problems(const topology::Topology& t, const StudyGroup& g, const JsonCursor* c) {
  try {
    const plan::Tensor big = reshard::parse_tensor_arg(g.tensor);
    const plan::Tensor small = reshard::parse_tensor_arg(g.verify_tensor);
    if (big.shape.size() != small.shape.size())
      throw UsageError(
          fmt::format("verify_tensor \"{}\" has another rank than tensor \"{}\"", g.verify_tensor, g.tensor));
    const reshard::ShardingSpec r{std::vector<std::vector<int>>(big.shape.size())};  // R ... R
    const topology::DeviceMesh mesh = topology::select_mesh(t, g.mesh);
    Problem a = reshard::redistribute::problem_on(big, mesh, mesh, r, r);
    Problem b = reshard::redistribute::problem_on(small, mesh, mesh, r, r);
    for (const auto& type : reshard::redistribute::all_types(a.tensor.shape, a.axes))
      if (!fits(b.tensor.shape, type, b.axes))
        throw UsageError(fmt::format("type {} fits tensor \"{}\" but not verify_tensor \"{}\"", type.str(),
                                     g.tensor, g.verify_tensor));
    return {std::move(a), std::move(b)};
  } catch (const UsageError& e) {
    if (c == nullptr) throw;
    c->fail(e.what());
  }
}

StudyPairRow row_of(const StudyGroup& g, const Problem& p, const Outcome& o,
                    const reshard::redistribute::RedistBound& lb) {
  StudyPairRow r;
  r.group = g.name;
  r.src = p.src.str();
  r.dst = p.dst.str();
  r.strategy = o.strategy;
  r.time_s = o.result.makespan.seconds();
  r.lower_bound_s = lb.time.seconds();
  r.steps = o.steps.size();
  const reshard::redistribute::Emission& e = o.emission;
  r.moved_bytes = static_cast<double>(e.moved.count());
  r.network_bytes = o.network_bytes;
  r.peak_memory_bytes = static_cast<double>(e.peak_memory.count());
  r.max_shard_bytes = static_cast<double>(e.max_shard.count());
  Bytes widest;
  for (const auto& s : e.steps) widest = std::max(widest, s.written);
  r.memory_bound_bytes = static_cast<double>((e.max_shard + widest).count());
  return r;
}

}  // namespace

RedistStudy load_redistribution_study(const JsonCursor& root) {
  if (!root.is_object()) root.fail("a redistribution study is a JSON object");
  root.require_format(kFormat);
  root.allow_only({"format", "name", "description", "groups"});
  RedistStudy s;
  s.name = root["name"].as_name();
  if (auto d = root.find("description")) s.description = d->as_string();
  const JsonCursor groups = root["groups"];
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const JsonCursor c = groups.at(i);
    c.allow_only({"name", "machine", "mesh", "tensor", "verify_tensor"});
    StudyGroup g{c["name"].as_name(), topology::cluster_spec_from_json(c["machine"]), c["mesh"].as_name(),
                 c["tensor"].as_name(), c["verify_tensor"].as_name()};
    const topology::Topology t = topology::build_cluster(g.machine);
    (void)problems(t, g, &c);
    s.groups.push_back(std::move(g));
  }
  if (s.groups.empty()) groups.fail("a study needs at least one group");
  return s;
}

std::vector<StudyPairRow> run_redistribution_study(
    const RedistStudy& s, const std::function<bool(const plan::Plan&)>& verify,
    const std::function<void(std::size_t, std::size_t)>& progress) {
  std::size_t total = 0;
  std::vector<topology::Topology> topos;
  std::vector<std::pair<Problem, Problem>> bases;
  for (const auto& g : s.groups) {
    topos.push_back(topology::build_cluster(g.machine));
    bases.push_back(problems(topos.back(), g, nullptr));
    const auto n =
        reshard::redistribute::all_types(bases.back().first.tensor.shape, bases.back().first.axes).size();
    total += n * n;
  }
  std::vector<StudyPairRow> rows;
  std::size_t done = 0;
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const auto& t = topos[gi];
    const auto& [big, small] = bases[gi];
    reshard::redistribute::StepTimer timer(t, big);
    const auto types = reshard::redistribute::all_types(big.tensor.shape, big.axes);
    for (const auto& a : types)
      for (const auto& b : types) {
        Problem p = big;
        Problem q = small;
        p.src = q.src = a;
        p.dst = q.dst = b;
        const reshard::redistribute::RedistBound lb = lower_bound(t, p);
        const auto outcomes = evaluate(t, p,
                                       {std::begin(reshard::redistribute::kAllStrategies),
                                        std::end(reshard::redistribute::kAllStrategies)},
                                       timer);
        const Time xla = outcomes.back().result.makespan;
        for (const Outcome& o : outcomes) {
          StudyPairRow r = row_of(s.groups[gi], p, o, lb);
          r.verified = verify(emit(t, q, o.steps).plan);
          if (o.strategy != reshard::redistribute::Strategy::xla && xla > Time::zero())
            r.speedup = xla.seconds() / o.result.makespan.seconds();
          rows.push_back(std::move(r));
        }
        if (progress) progress(++done, total);
      }
  }
  return rows;
}

namespace {

// Speedups of one strategy's rows over XLA-style.
struct Speedups {
  std::size_t n = 0;
  double log_sum = 0, max = 0, min = 0;
  std::string max_pair, min_pair;
  std::size_t slower = 0;
  void add(const StudyPairRow& r) {
    if (r.speedup <= 0) return;
    const std::string pair = fmt::format("{}: {} -> {}", r.group, r.src, r.dst);
    if (n == 0 || r.speedup > max) std::tie(max, max_pair) = std::tie(r.speedup, pair);
    if (n == 0 || r.speedup < min) std::tie(min, min_pair) = std::tie(r.speedup, pair);
    ++n;
    slower += r.speedup < 1 ? 1U : 0U;
    log_sum += std::log(r.speedup);
  }
  [[nodiscard]] double geomean() const { return n > 0 ? std::exp(log_sum / static_cast<double>(n)) : 0; }
};

}  // namespace

std::vector<GroupSummary> summarise(const RedistStudy& s, const std::vector<StudyPairRow>& rows) {
  std::vector<GroupSummary> out;
  std::vector<std::string> names;
  for (const auto& g : s.groups) names.push_back(g.name);
  names.emplace_back("all");
  for (const auto& name : names) {
    GroupSummary g;
    g.group = name;
    Speedups synth, rink;
    for (std::size_t i = 0; i < rows.size();) {
      // The rows of one pair: synth, rink (when Rink's steps found a
      // sequence) and xla.
      std::size_t end = i + 1;
      while (end < rows.size() && rows[end].group == rows[i].group && rows[end].src == rows[i].src &&
             rows[end].dst == rows[i].dst)
        ++end;
      const std::size_t first = i;
      i = end;
      if (name != "all" && rows[first].group != name) continue;
      const StudyPairRow& x = rows[end - 1];
      ++g.pairs;
      for (std::size_t k = first; k < end; ++k) {
        const StudyPairRow& r = rows[k];
        g.plans += 1;
        g.verified += r.verified.value_or(false) ? 1U : 0U;
        if (k + 1 == end) continue;  // xla itself
        g.more_network += r.network_bytes > x.network_bytes ? 1U : 0U;
        g.over_memory_bound += r.peak_memory_bytes > r.memory_bound_bytes ? 1U : 0U;
        (r.strategy == Strategy::synth ? synth : rink).add(r);
        if (r.strategy == Strategy::synth)
          g.synth_peak_over_m = std::max(g.synth_peak_over_m, r.peak_memory_bytes / r.max_shard_bytes);
      }
      g.xla_peak_over_m = std::max(g.xla_peak_over_m, x.peak_memory_bytes / x.max_shard_bytes);
    }
    g.compared = synth.n;
    g.geomean_speedup = synth.geomean();
    std::tie(g.max_speedup, g.max_pair, g.min_speedup, g.min_pair) =
        std::tie(synth.max, synth.max_pair, synth.min, synth.min_pair);
    g.synth_slower = synth.slower;
    g.rink_geomean_speedup = rink.geomean();
    g.rink_max_speedup = rink.max;
    g.rink_max_pair = rink.max_pair;
    out.push_back(std::move(g));
  }
  return out;
}

Results redistribution_results(const std::vector<StudyPairRow>& rows) {
  // results.csv says "yes", "no" or "-" for verified and always writes the
  // speedup; results.json has true, false or null, and a speedup only
  // where one is defined.
  Results out({{"group", CsvFormat::quoted},
               {"src"},
               {"dst"},
               {"strategy"},
               {"time_s", CsvFormat::general9},
               {"lower_bound_s", CsvFormat::general9},
               {"steps"},
               {"moved_bytes", CsvFormat::fixed0},
               {"network_bytes", CsvFormat::fixed0},
               {"peak_memory_bytes", CsvFormat::fixed0},
               {"max_shard_bytes", CsvFormat::fixed0},
               {"memory_bound_bytes", CsvFormat::fixed0},
               {"verified", CsvFormat::plain, false},
               {"verified", CsvFormat::none},
               {"speedup", CsvFormat::general6, false},
               {"speedup", CsvFormat::none}});
  for (const auto& r : rows)
    out.add({r.group, r.src, r.dst, std::string(to_string(r.strategy)), r.time_s, r.lower_bound_s,
             static_cast<std::int64_t>(r.steps), r.moved_bytes, r.network_bytes, r.peak_memory_bytes,
             r.max_shard_bytes, r.memory_bound_bytes,
             std::string(r.verified ? (*r.verified ? "yes" : "no") : "-"),
             r.verified ? Json(*r.verified) : Json(nullptr), r.speedup,
             r.speedup > 0 ? Cell(r.speedup) : Cell()});
  return out;
}

namespace {

Json summary_json(const RedistStudy& s, const std::vector<StudyPairRow>& rows) {
  Json summary = Json::array();
  for (const auto& g : summarise(s, rows))
    summary.push_back(Json{{"group", g.group},
                           {"pairs", g.pairs},
                           {"compared", g.compared},
                           {"plans_verified", g.verified},
                           {"plans", g.plans},
                           {"geomean_speedup", g.geomean_speedup},
                           {"max_speedup", g.max_speedup},
                           {"max_pair", g.max_pair},
                           {"min_speedup", g.min_speedup},
                           {"min_pair", g.min_pair},
                           {"rink_geomean_speedup", g.rink_geomean_speedup},
                           {"rink_max_speedup", g.rink_max_speedup},
                           {"rink_max_pair", g.rink_max_pair},
                           {"synth_slower", g.synth_slower},
                           {"more_network_plans", g.more_network},
                           {"over_memory_bound_plans", g.over_memory_bound},
                           {"synth_max_peak_over_shard", g.synth_peak_over_m},
                           {"xla_max_peak_over_shard", g.xla_peak_over_m}});
  return summary;
}

// The table view: one line per group and for all of them together.
std::string summary_text(const RedistStudy& s, const std::vector<GroupSummary>& summary) {
  std::string out = fmt::format(
      "{}: {}\nspeedup = XLA-style time / synth (rink) time, over the pairs where XLA-style moves data; "
      "more network and over bound count synth and rink plans\n\n",
      s.name, s.description);
  Table tab({"group", "pairs", "verified", "synth geomean", "max", "min", "slower", "rink geomean", "max",
             "more network", "over bound", "synth peak/M", "xla peak/M"});
  for (const auto& g : summary)
    tab.add({g.group, fmt::format("{}", g.pairs), fmt::format("{}/{}", g.verified, g.plans),
             fmt::format("{:.2f}x", g.geomean_speedup), fmt::format("{:.2f}x", g.max_speedup),
             fmt::format("{:.2f}x", g.min_speedup), fmt::format("{}", g.synth_slower),
             fmt::format("{:.2f}x", g.rink_geomean_speedup), fmt::format("{:.2f}x", g.rink_max_speedup),
             fmt::format("{}", g.more_network), fmt::format("{}", g.over_memory_bound),
             fmt::format("{:.2f}", g.synth_peak_over_m), fmt::format("{:.2f}", g.xla_peak_over_m)});
  std::vector<bool> right(13, true);
  right[0] = false;
  out += tab.render(right);
  const auto& all = summary.back();
  out += fmt::format(
      "\nall groups, Rink et al.'s steps alone: geometric-mean speedup {:.2f}x over XLA-style (they report "
      "1.22x), maximum {:.2f}x (they report 5.7x) at {}\n"
      "synth (with direct exchanges): geometric mean {:.2f}x, maximum {:.2f}x at {}; slowest {:.2f}x at {}\n",
      all.rink_geomean_speedup, all.rink_max_speedup, all.rink_max_pair, all.geomean_speedup, all.max_speedup,
      all.max_pair, all.min_speedup, all.min_pair);
  return out;
}

// tools/plot_redistribution.py's data: `group,series,speedup` for each synth
// and rink plan with a speedup, as results.csv writes it.
std::string chart_data(const std::vector<StudyPairRow>& rows) {
  std::string out = "group,series,speedup\n";
  for (const auto& r : rows) {
    if (r.strategy == Strategy::xla) continue;
    const std::string speedup = fmt::format("{:.6g}", r.speedup);
    if (std::strtod(speedup.c_str(), nullptr) > 0)
      out += fmt::format("{},{},{}\n", csv_quoted(r.group), to_string(r.strategy), speedup);
  }
  return out;
}

class RedistributionStudyRun final : public Study {
 public:
  explicit RedistributionStudyRun(RedistStudy s) : s_(std::move(s)) {}

  Report run(const Context& c) const override {
    const auto rows = run_redistribution_study(
        s_, [](const plan::Plan& p) { return runtime::verify_on_host(p).ok; },
        c.progress_of("study " + s_.name, "pairs"));
    const auto summary = summarise(s_, rows);
    Report r;
    r.results = redistribution_results(rows);
    r.document = Json{{"study", s_.name}, {"rows", r.results.json()}, {"summary", summary_json(s_, rows)}};
    r.text = summary_text(s_, summary);
    r.chart = Chart{"plot_redistribution.py", chart_data(rows)};
    r.files_line = {true, true, true, ", speedup.png", " (plot skipped: python3-matplotlib missing?)"};
    const auto& all = summary.back();
    if (all.verified != all.plans)
      r.failure = Failure{Failure::Kind::not_verified, fmt::format("{} of {} plans failed host verification",
                                                                   all.plans - all.verified, all.plans)};
    return r;
  }

 private:
  RedistStudy s_;
};

}  // namespace

std::unique_ptr<Study> redistribution_study_kind(const JsonCursor& root) {
  return std::make_unique<RedistributionStudyRun>(load_redistribution_study(root));
}

}  // namespace meshsim::studies
