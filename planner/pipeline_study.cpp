#include "planner/pipeline_study.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/input_file.h"
#include "plan/calibration.h"
#include "planner/pipeline_layout.h"
#include "planner/study.h"
#include "sim/calibrate_apply.h"
#include "sim/compute_model.h"

namespace meshsim::planner {

namespace {
constexpr const char* kFormat = "meshsim.pipeline-study/1";
}  // namespace

bool is_pipeline_study(const std::string& file) {
  return has_format(read_json_file(file), kFormat);
}

namespace {
// One entry of "methods".
PipelineMethod method_from_json(const JsonCursor& c) {
  c.allow_only({"name", "reshard", "schedule", "balance", "overlap"});
  PipelineMethod m;
  m.name = c["name"].as_string();
  const std::string r = c["reshard"].as_string();
  if (r == "auto") {
    m.reshard_auto = true;
  } else if (auto st = strategy_from(r)) {
    m.reshard = *st;
  } else {
    c["reshard"].fail(
        fmt::format("unknown strategy \"{}\" ({} or auto)", r, fmt::join(kStrategyNames.names(), ", ")));
  }
  if (auto sc = c.find("schedule")) {
    const auto v = schedule_from(sc->as_string());
    if (!v) sc->fail("unknown schedule (gpipe, 1f1b, eager-1f1b, interleaved-1f1b, zb-h1)");
    m.schedule = *v;
  }
  if (auto b = c.find("balance")) {
    const auto v = balance_from(b->as_string());
    if (!v) b->fail("unknown balancing mode (none, device, host-size, host-order, search)");
    m.balance = *v;
  }
  if (auto o = c.find("overlap")) m.overlap = o->as_bool();
  return m;
}
}  // namespace

PipelineStudy load_pipeline_study(const std::string& file) {
  const Json j = read_json_file(file);
  const JsonCursor root(j, file);
  if (!j.is_object()) root.fail("a pipeline study is a JSON object");
  root.require_format(kFormat);
  root.allow_only({"format", "name", "description", "topology", "compute_efficiency", "calibration",
                   "methods", "baseline", "bound", "paper_baseline", "cases"});
  PipelineStudy s;
  s.name = root["name"].as_name();
  if (auto d = root.find("description")) s.description = d->as_string();
  s.topology = resolve_beside(file, root["topology"].as_name());
  if (auto e = root.find("compute_efficiency")) {
    const double v = e->as_number();
    if (!(v > 0 && v <= 1)) e->fail("must be in (0, 1]");
    s.compute_efficiency = v;
  }
  if (auto c = root.find("calibration")) {
    if (s.compute_efficiency) c->fail("give a calibration or a compute_efficiency, not both");
    s.calibration = file_beside(file, *c, "calibration");
  }
  const JsonCursor ms = root["methods"];
  if (ms.size() == 0) ms.fail("a pipeline study needs at least one method");
  ms.require_unique("name");
  for (std::size_t i = 0; i < ms.size(); ++i) s.methods.push_back(method_from_json(ms.at(i)));
  auto method_name = [&](const char* key) {
    const JsonCursor c = root[key];
    std::string n = c.as_string();
    bool found = false;
    for (const auto& m : s.methods) found = found || m.name == n;
    if (!found) c.fail(fmt::format("\"{}\" is not one of the methods", n));
    return n;
  };
  s.baseline = method_name("baseline");
  // The bound (optional) is the method that moves nothing between stages:
  // "best" leaves it out, so it must be the signal one, not a real method.
  if (root.find("bound")) {
    s.bound = method_name("bound");
    for (const auto& m : s.methods)
      if (m.name == s.bound && (m.reshard_auto || m.reshard != Strategy::signal))
        root["bound"].fail(
            fmt::format("\"{}\" moves data between stages; the bound is the method with "
                        "\"reshard\": \"signal\" (best leaves it out, so it must not be a "
                        "real method)",
                        s.bound));
  }
  s.paper_baseline = root.find("paper_baseline") ? method_name("paper_baseline") : s.baseline;
  const JsonCursor cs = root["cases"];
  if (cs.size() == 0) cs.fail("a pipeline study needs at least one case");
  cs.require_unique("name");
  for (std::size_t i = 0; i < cs.size_at_most(kMaxStudyCases, "cases"); ++i) {
    const JsonCursor c = cs.at(i);
    c.allow_only({"group", "name", "model", "dp", "tp", "pp", "microbatches", "batch", "recompute",
                  "stage_starts", "gpus_per_host", "layer_split", "paper_gain"});
    PipelineStudyCase pc;
    pc.group = c["group"].as_string();
    pc.name = c["name"].as_string();
    pc.model = resolve_beside(file, c["model"].as_string());
    ParallelConfig& cfg = pc.config;
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
      cfg.recompute = rc->as_bool();
      for (const PipelineMethod& m : s.methods)
        if (cfg.recompute && m.schedule == Schedule::zb_h1)
          rc->fail(
              fmt::format("method \"{}\" runs zb-h1, which does not combine with recomputation", m.name));
    }
    if (auto st = c.find("stage_starts")) {
      for (std::size_t k = 0; k < st->size_at_most(1 << 16, "stages"); ++k)
        cfg.stage_starts.push_back(static_cast<int>(st->at(k).as_int_in(0, 1 << 30)));
      try {
        check_stage_starts(cfg.stage_starts, cfg.pp, 1 << 30);  // the layer count is checked when it runs
      } catch (const UsageError& e) {
        st->fail(e.what());
      }
    }
    if (auto g = c.find("gpus_per_host")) cfg.gpus_per_host = static_cast<int>(g->as_int_in(1, 1 << 20));
    if (auto ls = c.find("layer_split"); ls && ls->as_string() != "auto") {
      cfg.layer_split = kLayerSplitNames.parse(ls->as_string());
      if (!cfg.layer_split) ls->fail("unknown layer split (auto, channels, batch)");
    }
    if (auto g = c.find("paper_gain")) pc.paper_gain = g->as_number();
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
    const PipelineStudy& s, const topology::Topology& t, const sim::SimOptions& opts,
    const std::function<void(std::size_t, std::size_t)>& progress,
    const std::function<Model(const std::string&)>& load_model) {
  std::vector<PipelineStudyRow> rows;
  std::map<std::string, Model> models;
  for (std::size_t i = 0; i < s.cases.size(); ++i) {
    const PipelineStudyCase& c = s.cases[i];
    if (!models.contains(c.model))
      models.emplace(c.model, load_model ? load_model(c.model) : load_model_file(c.model));
    const Model& model = models.at(c.model);
    const std::size_t first = rows.size();
    for (const PipelineMethod& m : s.methods) {
      ParallelConfig cfg = c.config;
      cfg.schedule = m.schedule;
      cfg.reshard = m.reshard;
      cfg.reshard_auto = m.reshard_auto;
      cfg.overlap = m.overlap;
      cfg.balance = m.balance;
      const PipelineIteration it = build_pipeline(model, t, cfg, opts.device_models);
      const sim::SimResult r = sim::simulate(it.plan, t, opts);
      const PipelineMetrics pm = pipeline_metrics(it, t, r);
      rows.push_back({c.group, c.name, m.name, pm.iteration_s, pm.samples_per_s, pm.tflops_per_gpu,
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

Json pipeline_study_json(const PipelineStudy& s, const std::vector<PipelineStudyRow>& rows) {
  Json out = Json::array();
  for (const auto& r : rows) {
    Json o{{"group", r.group},
           {"case", r.case_name},
           {"method", r.method},
           {"iteration_s", r.iteration_s},
           {"samples_per_s", r.samples_per_s},
           {"tflops_per_gpu", r.tflops_per_gpu},
           {"exposed_comm_s", r.exposed_comm_s},
           {"gain", r.gain}};
    for (const auto& c : s.cases) {
      if (c.name != r.case_name) continue;
      o["recompute"] = c.config.recompute;
      if (!c.config.stage_starts.empty()) o["stage_starts"] = c.config.stage_starts;
      if (c.paper_gain) o["paper_gain"] = *c.paper_gain;
    }
    out.push_back(std::move(o));
  }
  return Json{{"study", s.name},
              {"baseline", s.baseline},
              {"bound", s.bound},
              {"paper_baseline", s.paper_baseline},
              {"results", std::move(out)}};
}

std::string pipeline_study_csv(const std::vector<PipelineStudyRow>& rows) {
  std::string csv = "group,case,method,iteration_s,samples_per_s,tflops_per_gpu,exposed_comm_s,gain\n";
  for (const auto& r : rows)
    csv += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", r.group, r.case_name, r.method,
                       r.iteration_s, r.samples_per_s, r.tflops_per_gpu, r.exposed_comm_s, r.gain);
  return csv;
}

}  // namespace meshsim::planner
