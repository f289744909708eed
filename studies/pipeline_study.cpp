#include "studies/pipeline_study.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/input_file.h"
#include "core/table.h"
#include "pipeline/layout.h"
#include "plan/calibration.h"
#include "sim/calibrate_apply.h"
#include "sim/compute_model.h"
#include "sim/profiles.h"
#include "topology/placement.h"

namespace meshsim::studies {

namespace {
constexpr const char* kFormat = "meshsim.pipeline-study/1";
}  // namespace

namespace {
// One entry of "methods".
PipelineMethod method_from_json(const JsonCursor& c) {
  c.allow_only({"name", "reshard", "schedule", "balance", "overlap"});
  PipelineMethod m;
  m.name = c["name"].as_string();
  const std::string r = c["reshard"].as_string();
  if (r == "auto") {
    m.reshard_auto = true;
  } else if (auto st = reshard::strategy_from(r)) {
    m.reshard = *st;
  } else {
    c["reshard"].fail(fmt::format("unknown strategy \"{}\" ({} or auto)", r,
                                  fmt::join(reshard::kStrategyNames.names(), ", ")));
  }
  if (auto sc = c.find("schedule")) {
    const auto v = model::schedule_from(sc->as_string());
    if (!v) sc->fail("unknown schedule (gpipe, 1f1b, eager-1f1b, interleaved-1f1b, zb-h1)");
    m.schedule = *v;
  }
  if (auto b = c.find("balance")) {
    const auto v = reshard::balance_from(b->as_string());
    if (!v) b->fail("unknown balancing mode (none, device, host-size, host-order, search)");
    m.balance = *v;
  }
  if (auto o = c.find("overlap")) m.overlap = o->as_bool();
  return m;
}
}  // namespace

namespace {

// The method `root[key]` names; fails there when the study has no such method.
std::string method_named(const JsonCursor& root, const char* key,
                         const std::vector<PipelineMethod>& methods) {
  const JsonCursor c = root[key];
  std::string n = c.as_string();
  if (std::none_of(methods.begin(), methods.end(), [&](const PipelineMethod& m) { return m.name == n; }))
    c.fail(fmt::format("\"{}\" is not one of the methods", n));
  return n;
}

// One entry of "cases" (`file`: the study's, that its model is named beside).
PipelineStudyCase case_from_json(const JsonCursor& c, const std::string& file,
                                 const std::vector<PipelineMethod>& methods) {
  c.allow_only({"group", "name", "model", "dp", "tp", "pp", "microbatches", "batch", "recompute",
                "stage_starts", "gpus_per_host", "layer_split", "paper_gain"});
  PipelineStudyCase pc;
  pc.group = c["group"].as_string();
  pc.name = c["name"].as_string();
  pc.model = resolve_beside(file, c["model"].as_string());
  pipeline::PipelineConfig& cfg = pc.config;
  cfg.dp = static_cast<int>(c["dp"].as_int_in(1, 1 << 20));
  cfg.tp = static_cast<int>(c["tp"].as_int_in(1, 1 << 20));
  cfg.pp = static_cast<int>(c["pp"].as_int_in(1, 1 << 20));
  cfg.microbatches = static_cast<int>(c["microbatches"].as_int_in(1, 1 << 20));
  const auto batch = c["batch"].as_int_in(1, 1 << 30);
  const std::int64_t split = std::int64_t{cfg.dp} * cfg.microbatches;  // both ≤ 2^20: no overflow
  if (batch % split != 0)
    c["batch"].fail(fmt::format("a batch of {} does not split into dp {} x {} microbatches", batch, cfg.dp,
                                cfg.microbatches));
  cfg.microbatch_size = static_cast<int>(batch / split);
  if (auto rc = c.find("recompute")) {
    cfg.recompute = rc->as_bool() ? model::Recompute::full : model::Recompute::none;
    for (const PipelineMethod& m : methods)
      if (cfg.full_recompute() && m.schedule == model::Schedule::zb_h1)
        rc->fail(fmt::format("method \"{}\" runs zb-h1, which does not combine with recomputation", m.name));
  }
  if (auto st = c.find("stage_starts")) {
    for (std::size_t k = 0; k < st->size_at_most(1 << 16, "stages"); ++k)
      cfg.stage_starts.push_back(static_cast<int>(st->at(k).as_int_in(0, 1 << 30)));
    try {
      pipeline::check_stage_starts(cfg.stage_starts, cfg.pp,
                                   1 << 30);  // the layer count is checked when it runs
    } catch (const UsageError& e) {
      st->fail(e.what());
    }
  }
  if (auto g = c.find("gpus_per_host")) cfg.gpus_per_host = static_cast<int>(g->as_int_in(1, 1 << 20));
  if (auto ls = c.find("layer_split"); ls && ls->as_string() != "auto") {
    cfg.layer_split = model::kLayerSplitNames.parse(ls->as_string());
    if (!cfg.layer_split) ls->fail("unknown layer split (auto, channels, batch)");
  }
  if (auto g = c.find("paper_gain")) pc.paper_gain = g->as_number();
  return pc;
}

}  // namespace

PipelineStudy load_pipeline_study(const JsonCursor& root) {
  const std::string& file = root.file();
  if (!root.is_object()) root.fail("a pipeline study is a JSON object");
  root.require_format(kFormat);
  root.allow_only({"format", "name", "description", "topology", "placement", "compute_efficiency",
                   "calibration", "methods", "baseline", "bound", "paper_baseline", "cases"});
  PipelineStudy s;
  s.name = root["name"].as_name();
  if (auto d = root.find("description")) s.description = d->as_string();
  s.topology = resolve_beside(file, root["topology"].as_name());
  if (auto p = root.find("placement")) s.placement = topology::placement_from_json(*p);
  const ComputeSetting compute = compute_setting(file, root);
  s.compute_efficiency = compute.efficiency;
  s.calibration = compute.calibration;
  const JsonCursor ms = root["methods"];
  if (ms.size() == 0) ms.fail("a pipeline study needs at least one method");
  ms.require_unique("name");
  for (std::size_t i = 0; i < ms.size(); ++i) s.methods.push_back(method_from_json(ms.at(i)));
  s.baseline = method_named(root, "baseline", s.methods);
  // The bound (optional) is the method that moves nothing between stages:
  // "best" leaves it out, so it must be the signal one, not a real method.
  if (root.find("bound")) {
    s.bound = method_named(root, "bound", s.methods);
    for (const auto& m : s.methods)
      if (m.name == s.bound && (m.reshard_auto || m.reshard != reshard::Strategy::signal))
        root["bound"].fail(
            fmt::format("\"{}\" moves data between stages; the bound is the method with "
                        "\"reshard\": \"signal\" (best leaves it out, so it must not be a "
                        "real method)",
                        s.bound));
  }
  s.paper_baseline =
      root.find("paper_baseline") ? method_named(root, "paper_baseline", s.methods) : s.baseline;
  const JsonCursor cs = root["cases"];
  if (cs.size() == 0) cs.fail("a pipeline study needs at least one case");
  cs.require_unique("name");
  for (std::size_t i = 0; i < cs.size_at_most(kMaxStudyCases, "cases"); ++i) {
    PipelineStudyCase pc = case_from_json(cs.at(i), file, s.methods);
    if (std::find(s.groups.begin(), s.groups.end(), pc.group) == s.groups.end()) s.groups.push_back(pc.group);
    s.cases.push_back(std::move(pc));
  }
  return s;
}

std::string prepare_study_options(const PipelineStudy& s, topology::Topology& t, sim::SimOptions& opts,
                                  bool calibrated) {
  opts.fluid_broadcast = true;
  if (!calibrated && !s.calibration.empty())
    sim::apply_calibration(plan::load_calibration_file(s.calibration), s.calibration, t, opts.device_models);
  return sim::apply_compute_efficiency(t, opts.device_models, s.compute_efficiency, plan::DType::f16);
}

std::vector<PipelineStudyRow> run_pipeline_study(
    const PipelineStudy& s, topology::Topology& t, const sim::SimOptions& opts,
    const std::function<void(std::size_t, std::size_t)>& progress,
    const std::function<model::Model(const std::string&)>& load_model) {
  std::vector<PipelineStudyRow> rows;
  std::map<std::string, model::Model> models;
  for (std::size_t i = 0; i < s.cases.size(); ++i) {
    const PipelineStudyCase& c = s.cases[i];
    if (!models.contains(c.model))
      models.emplace(c.model, load_model ? load_model(c.model) : model::load_model_file(c.model));
    const model::Model& model = models.at(c.model);
    const std::size_t first = rows.size();
    (void)topology::place_job(t, pipeline::job_hosts(t, c.config));  // each case is a job of its own size
    for (const PipelineMethod& m : s.methods) {
      pipeline::PipelineConfig cfg = c.config;
      cfg.schedule = m.schedule;
      cfg.reshard = m.reshard;
      cfg.reshard_auto = m.reshard_auto;
      cfg.overlap = m.overlap;
      cfg.balance = m.balance;
      const pipeline::PipelineIteration it = pipeline::build_pipeline(model, t, cfg, opts.device_models);
      const sim::SimResult r = sim::simulate(it.plan, t, opts);
      const pipeline::PipelineMetrics pm = pipeline::pipeline_metrics(it, t, r);
      rows.push_back({c.group, c.name, m.name, pm.iteration_s, pm.samples_per_s, pm.tflops_per_gpu, pm.mfu,
                      pm.exposed_comm_s(), 0.0});
    }
    double base = 0;
    for (std::size_t k = first; k < rows.size(); ++k)
      if (rows[k].method == s.baseline) base = rows[k].samples_per_s;
    for (std::size_t k = first; k < rows.size(); ++k)
      rows[k].gain = base > 0 ? rows[k].samples_per_s / base - 1 : 0;
    if (progress) progress(i + 1, s.cases.size());
  }
  return rows;
}

Results pipeline_results(const PipelineStudy& s, const std::vector<PipelineStudyRow>& rows) {
  Results out({{"group"},
               {"case"},
               {"method"},
               {"iteration_s", CsvFormat::general6},
               {"samples_per_s", CsvFormat::general6},
               {"tflops_per_gpu", CsvFormat::general6},
               {"mfu", CsvFormat::general6},
               {"exposed_comm_s", CsvFormat::general6},
               {"gain", CsvFormat::general6},
               {"recompute", CsvFormat::none},
               {"stage_starts", CsvFormat::none},
               {"paper_gain", CsvFormat::none}});
  for (const auto& r : rows) {
    const auto c = std::find_if(s.cases.begin(), s.cases.end(),
                                [&](const PipelineStudyCase& x) { return x.name == r.case_name; });
    MESHSIM_ASSERT(c != s.cases.end(), "a row of a case of the study");
    out.add({r.group, r.case_name, r.method, r.iteration_s, r.samples_per_s, r.tflops_per_gpu, r.mfu,
             r.exposed_comm_s, r.gain, c->config.full_recompute(),
             c->config.stage_starts.empty() ? Cell() : Cell(Json(c->config.stage_starts)),
             c->paper_gain ? Cell(*c->paper_gain) : Cell()});
  }
  return out;
}

namespace {

// The table view of one group: per case, each method's iteration time, the
// best gain and the paper's.
std::string group_table(const PipelineStudy& s, const std::string& group,
                        const std::vector<PipelineStudyRow>& rows) {
  std::vector<std::string> header{"case"};
  for (const auto& m : s.methods) header.push_back(m.name);
  const bool other_paper_baseline = s.paper_baseline != s.baseline;
  header.push_back("best gain");
  if (other_paper_baseline) header.push_back("best over " + s.paper_baseline);
  header.push_back("paper gain (over " + s.paper_baseline + ")");
  Table tab(header);
  for (const auto& c : s.cases) {
    if (c.group != group) continue;
    std::vector<std::string> cells{c.name};
    const PipelineStudyRow* best = nullptr;
    double paper_base_s = 0;
    for (const auto& r : rows) {
      if (r.case_name != c.name) continue;
      cells.push_back(fmt::format("{:.3f}", r.iteration_s));
      if (r.method != s.bound && (!best || r.iteration_s < best->iteration_s)) best = &r;
      if (r.method == s.paper_baseline) paper_base_s = r.iteration_s;
    }
    cells.push_back(
        best ? fmt::format("{:+.1f} % ({}, MFU {:.1f} %)", 100 * best->gain, best->method, 100 * best->mfu)
             : std::string("-"));
    if (other_paper_baseline)
      cells.push_back(best ? fmt::format("{:+.1f} %", 100 * (paper_base_s / best->iteration_s - 1))
                           : std::string("-"));
    cells.push_back(c.paper_gain ? fmt::format("{:+.0f} %", 100 * *c.paper_gain) : std::string("-"));
    tab.add(cells);
  }
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  return fmt::format("\n{}\n{}", group, tab.render(right));
}

class PipelineStudyRun final : public Study {
 public:
  explicit PipelineStudyRun(PipelineStudy s) : s_(std::move(s)) {}

  Report run(const Context& c) const override {
    topology::Topology topo = load_study_topology(s_.topology);
    if (!s_.placement.empty()) topo.placement = s_.placement;
    sim::SimOptions opts;
    if (c.profiles != nullptr) opts.device_models = sim::profiled_models(topo, *c.profiles);
    if (c.calibration != nullptr)
      sim::apply_calibration(*c.calibration, c.calibration_file, topo, opts.device_models);
    const std::string compute = prepare_study_options(s_, topo, opts, c.calibration != nullptr);
    const auto rows =
        run_pipeline_study(s_, topo, opts, c.progress_of("study " + s_.name, "cases"), c.load_model);
    Report r;
    r.results = pipeline_results(s_, rows);
    r.document = Json{{"study", s_.name},
                      {"baseline", s_.baseline},
                      {"bound", s_.bound},
                      {"paper_baseline", s_.paper_baseline},
                      {"results", r.results.json()}};
    r.text = fmt::format(
        "{}: {}\ntopology {}; compute {}\niteration time (s) per method; gain = throughput over {}\n",
        s_.name, s_.description, topo.name, compute, s_.baseline);
    for (const auto& group : s_.groups) r.text += group_table(s_, group, rows);
    if (!s_.bound.empty())
      r.text += fmt::format(
          "best: the fastest method but the bound ({}), which moves nothing between stages\n", s_.bound);
    return r;
  }

 private:
  PipelineStudy s_;
};

}  // namespace

std::unique_ptr<Study> pipeline_study_kind(const JsonCursor& root) {
  return std::make_unique<PipelineStudyRun>(load_pipeline_study(root));
}

}  // namespace meshsim::studies
