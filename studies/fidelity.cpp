#include "studies/fidelity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/table.h"
#include "pipeline/terapipe_eval.h"
#include "plan/calibration.h"
#include "sim/calibrate_apply.h"
#include "sim/compute_model.h"
#include "studies/reshard_study.h"
#include "topology/topology_json.h"

namespace meshsim::studies {

namespace {

constexpr const char* kFormat = "meshsim.fidelity/1";

Band band_of(const JsonCursor& c) {
  if (c.size() != 2) c.fail("a band is [low, high]");
  const Band b{c.at(0).as_number(), c.at(1).as_number()};
  if (!(b.lo <= b.hi)) c.fail("a band's low end is above its high end");
  return b;
}

// The ablation's measured time for (setting, slices), if we hold it.
std::optional<double> ablation_time(const std::string& setting, int slices) {
  for (const auto& p : pipeline::terapipe_ablation())
    if (p.setting == setting && p.slices == slices) return p.time_s;
  return std::nullopt;
}

void load_terapipe(const std::string& file, const JsonCursor& t, Fidelity& f) {
  t.allow_only({"topology", "compute_efficiency", "calibration", "models", "rows"});
  f.terapipe_topology = file_beside(file, t["topology"], "topology");
  const ComputeSetting compute = compute_setting(file, t);
  f.terapipe_efficiency = compute.efficiency;
  f.terapipe_calibration = compute.calibration;
  f.terapipe_models = resolve_beside(file, t["models"].as_string());
  const JsonCursor rows = t["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const JsonCursor r = rows.at(i);
    r.allow_only({"setting", "figure", "slices", "target", "bound"});
    FidelityTeraPipeRow row;
    row.setting = r["setting"].as_string();
    const pipeline::TeraPipePaperSetting* setting = pipeline::find_terapipe_paper_setting(row.setting);
    if (!setting) {
      std::string known;
      for (const auto& s : pipeline::terapipe_paper_settings())
        known += std::string(known.empty() ? "" : ", ") + std::string(s.id);
      r["setting"].fail(fmt::format("no published times for setting \"{}\" (known: {})", row.setting, known));
    }
    const std::string model = f.terapipe_models + "/" + std::string(setting->model) + ".json";
    if (path_kind(model) != PathKind::file)
      r["setting"].fail(fmt::format("setting {} needs the model file {}", row.setting, model));
    row.figure = r["figure"].as_string();
    if (row.figure != "without" && row.figure != "with" && row.figure != "speedup" &&
        row.figure != "slices" && row.figure != "dp_over_uniform")
      r["figure"].fail("a TeraPipe figure is without, with, speedup, slices or dp_over_uniform");
    if (row.figure == "dp_over_uniform" && setting->dp_over_uniform <= 0)
      r["figure"].fail(
          fmt::format("the paper gives no gain of the DP over uniform slicing for setting {}", row.setting));
    if (row.figure == "slices") {
      row.slices = static_cast<int>(r["slices"].as_int_in(1, 1 << 20));
      if (!ablation_time(row.setting, row.slices))
        r["slices"].fail(
            fmt::format("no published time for setting {} with {} slices", row.setting, row.slices));
    } else if (r.find("slices")) {
      r["slices"].fail("\"slices\" belongs to the figure \"slices\"");
    }
    std::tie(row.target, row.bound) = relative_tolerance(r);
    f.terapipe_rows.push_back(row);
  }
}

void load_pipeline(const std::string& file, const JsonCursor& p, Fidelity& f) {
  p.allow_only({"study", "ours", "order", "rows"});
  const std::string study = resolve_beside(file, p["study"].as_string());
  const PipelineStudy& s = f.pipeline.emplace(load_study_file(study, load_pipeline_study));
  auto method = [&](const JsonCursor& c) {
    std::string n = c.as_string();
    for (const auto& m : s.methods)
      if (m.name == n) return n;
    c.fail(fmt::format("\"{}\" is not a method of {}", n, study));
  };
  f.ours = method(p["ours"]);
  f.baseline = s.paper_baseline;
  const JsonCursor order = p["order"];
  for (std::size_t i = 0; i < order.size(); ++i) f.order.push_back(method(order.at(i)));
  const JsonCursor rows = p["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const JsonCursor r = rows.at(i);
    r.allow_only({"case", "target", "bound"});
    FidelityGainRow row;
    row.case_name = r["case"].as_string();
    bool found = false;
    for (const auto& c : s.cases)
      if (c.name == row.case_name) found = c.paper_gain.has_value();
    if (!found) r["case"].fail(fmt::format("no case \"{}\" with a paper_gain in {}", row.case_name, study));
    row.target = band_of(r["target"]);
    row.bound = row.target;
    if (auto b = r.find("bound")) row.bound = band_of(*b);
    if (row.bound.lo > row.target.lo || row.bound.hi < row.target.hi)
      r["bound"].fail("a bound cannot be narrower than the target");
    f.gain_rows.push_back(row);
  }
}

Verdict verdict_of(double v, const Band& target, const Band& bound) {
  if (target.holds(v)) return Verdict::within_target;
  return bound.holds(v) ? Verdict::known_gap : Verdict::outside_bound;
}

void run_terapipe(const Fidelity& f, const std::function<void(const std::string&)>& progress,
                  std::vector<FidelityResult>& out) {
  if (f.terapipe_rows.empty()) return;
  topology::Topology topo = topology::load_topology_file(f.terapipe_topology);
  std::vector<sim::DeviceModel> calibrated;
  if (!f.terapipe_calibration.empty()) {
    sim::apply_calibration(plan::load_calibration_file(f.terapipe_calibration), f.terapipe_calibration, topo,
                           calibrated);
  }
  std::map<std::pair<std::string, int>, pipeline::TeraPipeOutcome> done;  // by (setting, uniform slices)
  for (const auto& row : f.terapipe_rows) {
    const pipeline::TeraPipePaperSetting& s = *pipeline::find_terapipe_paper_setting(row.setting);
    const std::pair<std::string, int> key{row.setting, row.slices};
    if (!done.contains(key)) {
      if (progress)
        progress(row.slices > 0
                     ? fmt::format("TeraPipe setting {} ({}), {} slices", s.id, s.model, row.slices)
                     : fmt::format("TeraPipe setting {} ({})", s.id, s.model));
      const model::Model model =
          model::load_model_file(f.terapipe_models + "/" + std::string(s.model) + ".json");
      sim::SimOptions opts;
      opts.device_models = calibrated;
      sim::apply_compute_efficiency(topo, opts.device_models, f.terapipe_efficiency, model.dtype);
      pipeline::TeraPipeShape shape = pipeline::paper_shape(s);
      shape.uniform_slices = row.slices;
      done.emplace(key, pipeline::evaluate_terapipe(model, topo, opts, shape));
    }
    const pipeline::TeraPipeOutcome& o = done.at(key);
    const double without = o.iteration(o.none);
    const double with = o.iteration(o.dp);
    const std::string name = fmt::format("{} {}, {} GPUs: ", s.id, s.model, s.gpus);
    const std::string source = "Li et al., TeraPipe (ICML 2021), Table 1 and Fig. 5";
    if (row.figure == "without")
      out.push_back(fidelity_relative("TeraPipe", name + "without slicing", "s", s.without_s, without,
                                      row.target, row.bound, source));
    else if (row.figure == "with")
      out.push_back(fidelity_relative("TeraPipe", name + "with slicing (DP)", "s", s.with_s, with, row.target,
                                      row.bound, source));
    else if (row.figure == "speedup")
      out.push_back(fidelity_relative("TeraPipe", name + "speedup", "x", s.without_s / s.with_s,
                                      without / with, row.target, row.bound, source));
    else if (row.figure == "dp_over_uniform")
      out.push_back(fidelity_relative("TeraPipe", name + "DP over the best uniform slicing (microbatch 1)",
                                      "x", s.dp_over_uniform, o.iteration(o.uniform_single) / with,
                                      row.target, row.bound,
                                      "Li et al., TeraPipe (ICML 2021), ablation of the slice count"));
    else
      out.push_back(
          fidelity_relative("TeraPipe", name + fmt::format("{} uniform slices, microbatch 1", row.slices),
                            "s", *ablation_time(row.setting, row.slices), o.iteration(o.fixed), row.target,
                            row.bound, "Li et al., TeraPipe (ICML 2021), ablation of the slice count"));
  }
}

}  // namespace

FidelityResult fidelity_relative(std::string group, std::string name, std::string unit, double published,
                                 double ours, double target, double bound, std::string source) {
  FidelityResult r{std::move(group),
                   std::move(name),
                   std::move(unit),
                   FigureKind::relative,
                   published,
                   ours,
                   ours / published - 1,
                   {published * (1 - target), published * (1 + target)},
                   {published * (1 - bound), published * (1 + bound)},
                   std::move(source)};
  r.verdict = verdict_of(ours, r.target, r.bound);
  return r;
}

std::pair<double, double> relative_tolerance(const JsonCursor& row) {
  auto fraction = [](const JsonCursor& c) {
    const double v = c.as_number();
    if (!(v > 0 && v < 100)) c.fail("a tolerance is a fraction above 0 and below 100 (0.2: 20 %)");
    return v;
  };
  const double target = fraction(row["target"]);
  double bound = target;
  if (auto b = row.find("bound")) bound = fraction(*b);
  if (bound < target) row["bound"].fail("a bound cannot be narrower than the target");
  return {target, bound};
}

Fidelity load_fidelity(const JsonCursor& root) {
  const std::string& file = root.file();
  if (!root.is_object()) root.fail("a fidelity report is a JSON object");
  root.require_format(kFormat);
  root.allow_only({"format", "name", "description", "terapipe", "pipeline", "collectives", "gemms"});
  Fidelity f;
  f.name = root["name"].as_name();
  if (auto d = root.find("description")) f.description = d->as_string();
  if (auto t = root.find("terapipe")) load_terapipe(file, *t, f);
  if (auto p = root.find("pipeline")) load_pipeline(file, *p, f);
  if (auto g = root.find("gemms")) load_fidelity_gemms(file, *g, f);
  if (auto c = root.find("collectives")) {
    c->allow_only({"study"});
    f.collectives = load_study_file(resolve_beside(file, (*c)["study"].as_string()), load_collective_study);
  }
  return f;
}

namespace {

void run_pipeline(const Fidelity& f, const std::function<void(const std::string&)>& progress,
                  std::vector<FidelityResult>& out) {
  if (!f.pipeline) return;
  const PipelineStudy& s = *f.pipeline;
  if (progress) progress(fmt::format("pipeline study {}", s.name));
  topology::Topology topo = load_study_topology(s.topology);
  sim::SimOptions opts;
  (void)prepare_study_options(s, topo, opts, false);  // as `meshsim study` runs it
  const std::vector<PipelineStudyRow> rows = run_pipeline_study(s, topo, opts);
  auto time_of = [&](const std::string& c, const std::string& method) {
    for (const auto& r : rows)
      if (r.case_name == c && r.method == method) return r.iteration_s;
    throw InternalError(fmt::format("no row for {} / {}", c, method));
  };
  const std::string source = fmt::format(
      "Zhuang et al., MLSys'23, abstract (gains over the study's paper_baseline: {})", f.baseline);
  for (const auto& row : f.gain_rows) {
    double paper = 0;
    for (const auto& c : s.cases)
      if (c.name == row.case_name) paper = *c.paper_gain;
    const double gain = time_of(row.case_name, f.baseline) / time_of(row.case_name, f.ours) - 1;
    FidelityResult r{s.name,
                     fmt::format("{}: gain of {} over {}", row.case_name, f.ours, f.baseline),
                     "gain",
                     FigureKind::range,
                     paper,
                     gain,
                     gain / paper - 1,
                     row.target,
                     row.bound,
                     source};
    r.verdict = verdict_of(gain, row.target, row.bound);
    out.push_back(r);
  }
  if (f.order.size() < 2) return;
  std::string chain;
  for (const auto& m : f.order) chain += (chain.empty() ? "" : " <= ") + m;
  for (const auto& c : s.cases) {
    bool holds = true;
    for (std::size_t k = 0; k + 1 < f.order.size(); ++k)
      holds = holds && time_of(c.name, f.order[k]) <= time_of(c.name, f.order[k + 1]) * (1 + 1e-9);
    FidelityResult r{
        s.name,  fmt::format("{}: iteration time {}", c.name, chain),
        "order", FigureKind::order,
        1,       holds ? 1.0 : 0.0,
        0,       {1, 1},
        {1, 1},  "Zhuang et al., MLSys'23: signal is the bound, each method improves on the next"};
    r.verdict = holds ? Verdict::within_target : Verdict::outside_bound;
    out.push_back(r);
  }
}

void run_collectives(const Fidelity& f, const std::function<void(const std::string&)>& progress,
                     std::vector<FidelityResult>& out) {
  if (!f.collectives) return;
  const CollectiveStudy& s = *f.collectives;
  if (progress) progress(fmt::format("collective study {}", s.name));
  for (const auto& row : s.rows) {
    const CollectiveStudyResult c = run_collective_row(row);
    out.push_back(fidelity_relative(s.name, row.name, std::string(published_unit(row)), row.published,
                                    c.predicted, row.tolerance, row.tolerance, row.source));
  }
}

}  // namespace

std::vector<FidelityResult> run_fidelity(const Fidelity& f,
                                         const std::function<void(const std::string&)>& progress) {
  std::vector<FidelityResult> out;
  run_terapipe(f, progress, out);
  run_pipeline(f, progress, out);
  run_collectives(f, progress, out);
  run_fidelity_gemms(f, progress, out);
  return out;
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::within_target: return "within target";
    case Verdict::known_gap: return "known gap";
    case Verdict::outside_bound: return "OUTSIDE BOUND";
  }
  return "?";
}

Results fidelity_results(const std::vector<FidelityResult>& rows) {
  // results.csv gives the error beside the figures and the bands as four
  // columns; results.json gives each band as [lo, hi] and the error last,
  // only where a row has one (not the order rows).
  Results out({{"group", CsvFormat::quoted},
               {"name", CsvFormat::quoted},
               {"unit"},
               {"published", CsvFormat::general6},
               {"ours", CsvFormat::general6},
               {"error", CsvFormat::fixed4, false},
               {"target", CsvFormat::none},
               {"bound", CsvFormat::none},
               {"target_low", CsvFormat::general6, false},
               {"target_high", CsvFormat::general6, false},
               {"bound_low", CsvFormat::general6, false},
               {"bound_high", CsvFormat::general6, false},
               {"verdict"},
               {"source", CsvFormat::quoted},
               {"error", CsvFormat::none}});
  for (const auto& r : rows) {
    const Cell error = r.kind == FigureKind::order ? Cell() : Cell(r.error);
    out.add({r.group, r.name, r.unit, r.published, r.ours, error, Json{r.target.lo, r.target.hi},
             Json{r.bound.lo, r.bound.hi}, r.target.lo, r.target.hi, r.bound.lo, r.bound.hi,
             std::string(to_string(r.verdict)), r.source, error});
  }
  return out;
}

namespace {

std::string band_text(const FidelityResult& r, const Band& b) {
  switch (r.kind) {
    case FigureKind::relative: return fmt::format("±{:.0f} %", 100 * (b.hi / r.published - 1));
    case FigureKind::range: return fmt::format("{:+.0f}..{:+.0f} %", 100 * b.lo, 100 * b.hi);
    case FigureKind::order: return "holds";
  }
  return "?";
}

std::string value_text(const FidelityResult& r, double v) {
  switch (r.kind) {
    case FigureKind::relative: return fmt::format("{:.3g} {}", v, r.unit);
    case FigureKind::range: return fmt::format("{:+.1f} %", 100 * v);
    case FigureKind::order: return v > 0 ? "holds" : "broken";
  }
  return "?";
}

// The table view: a table per group, the sources they cite, and the count
// of rows within their target, known gaps and rows outside their bound.
std::string fidelity_text(const Fidelity& f, const std::vector<FidelityResult>& rows,
                          std::size_t outside_target, std::size_t outside_bound) {
  std::string out = fmt::format("{}: {}\n", f.name, f.description);
  std::vector<std::string> sources;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i].group == rows[i - 1].group) continue;
    Table tab({"figure", "published", "ours", "error", "target", "bound", "verdict", "source"});
    for (const auto& r : rows) {
      if (r.group != rows[i].group) continue;
      auto at = std::find(sources.begin(), sources.end(), r.source);
      if (at == sources.end()) at = sources.insert(sources.end(), r.source);
      tab.add({r.name, value_text(r, r.published), value_text(r, r.ours),
               r.kind == FigureKind::order ? "" : fmt::format("{:+.1f} %", 100 * r.error),
               band_text(r, r.target), band_text(r, r.bound), std::string(to_string(r.verdict)),
               fmt::format("[{}]", at - sources.begin() + 1)});
    }
    out += fmt::format("\n{}\n{}", rows[i].group,
                       tab.render({false, true, true, true, true, true, false, false}));
  }
  out += "\n";
  for (std::size_t k = 0; k < sources.size(); ++k) out += fmt::format("[{}] {}\n", k + 1, sources[k]);
  out += fmt::format(
      "\n{} rows: {} within their target, {} known gaps (outside the target, within the bound), {} "
      "outside their bound\n",
      rows.size(), rows.size() - outside_target, outside_target - outside_bound, outside_bound);
  return out;
}

class FidelityRun final : public Study {
 public:
  FidelityRun(Fidelity f, std::string file) : f_(std::move(f)), file_(std::move(file)) {}

  Report run(const Context& c) const override {
    const auto rows = run_fidelity(f_, [&](const std::string& step) {
      if (c.note) c.note(fmt::format("{}: {}", f_.name, step));
    });
    std::size_t outside_target = 0;
    std::size_t outside_bound = 0;
    for (const auto& r : rows) {
      outside_target += r.verdict != Verdict::within_target ? 1 : 0;
      outside_bound += r.verdict == Verdict::outside_bound ? 1 : 0;
    }
    Report rep;
    rep.results = fidelity_results(rows);
    rep.document = Json{{"name", f_.name},
                        {"description", f_.description},
                        {"rows", rep.results.json()},
                        {"outside_target", outside_target},
                        {"outside_bound", outside_bound}};
    rep.text = fidelity_text(f_, rows, outside_target, outside_bound);
    rep.chart = Chart{"plot_fidelity.py", rep.results.csv()};
    rep.files_line = {true, false, false, ", fidelity.png", " (plot skipped: python3-matplotlib missing?)"};
    if (outside_bound > 0)
      rep.failure = Failure{
          Failure::Kind::out_of_bounds,
          fmt::format("{} of {} rows of {} are outside their bound", outside_bound, rows.size(), file_)};
    return rep;
  }

 private:
  Fidelity f_;
  std::string file_;
};

}  // namespace

std::unique_ptr<Study> fidelity_kind(const JsonCursor& root) {
  return std::make_unique<FidelityRun>(load_fidelity(root), root.file());
}

}  // namespace meshsim::studies
