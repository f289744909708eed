#pragma once
// Pipeline study files (`meshsim.pipeline-study/1`): training
// configurations, each simulated with a list of methods (a stage-transfer
// strategy and a schedule), as in the end-to-end comparison of Zhuang et
// al. (MLSys'23). `meshsim study` runs them.
//
// {"format": "meshsim.pipeline-study/1", "name": ..., "description": ...,
//  "topology": file (relative to the study file) or preset,
//  "compute_efficiency": 0.5,                        (optional)
//  "methods": [{"name": "broadcast + eager-1F1B", "reshard": "broadcast",
//               "schedule": "eager-1f1b", "balance": "host-size"}, ...],
//  "baseline": method name the gains are over, "bound": the method with
//  reshard "signal" (optional; "best" leaves it out, being no real method),
//  "paper_baseline": the method the cases' paper_gain is measured against
//                    (optional; default: baseline),
//  "cases": [{"group": ..., "name": ..., "model": file (relative),
//             "dp", "tp", "pp", "microbatches", "batch" (global),
//             "recompute": true (optional: full activation recomputation,
//             as `meshsim pipeline --recompute`; not with zb-h1 methods),
//             "layer_split": "auto" | "channels" | "batch" (optional, as
//             `meshsim pipeline --layer-split`; default auto),
//             "paper_gain": 0.10 (optional: the paper's throughput gain)}]}

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "pipeline/iteration.h"
#include "studies/study.h"

namespace meshsim::studies {

struct PipelineMethod {
  std::string name;
  model::Schedule schedule = model::Schedule::one_f_one_b;
  reshard::Strategy reshard = reshard::Strategy::broadcast;
  bool reshard_auto = false;
  reshard::Balance balance = reshard::Balance::host_size;
  bool overlap = true;  // PipelineConfig::overlap
};

struct PipelineStudyCase {
  std::string group;
  std::string name;
  std::string model;  // resolved path
  pipeline::PipelineConfig config;
  std::optional<double> paper_gain;
};

struct PipelineStudy {
  std::string name;
  std::string description;
  std::string topology;   // resolved path or preset name
  std::string placement;  // topology/placement.h, every case's; empty: the topology's own
  std::optional<double> compute_efficiency;
  std::string calibration;  // resolved path; empty: none (one or the other)
  std::vector<PipelineMethod> methods;
  std::string baseline;
  std::string bound;
  std::string paper_baseline;  // what paper_gain is over
  std::vector<std::string> groups;
  std::vector<PipelineStudyCase> cases;
};

/// ConfigError with the JSON path on any mistake.
[[nodiscard]] PipelineStudy load_pipeline_study(const JsonCursor& root);
/// The registry's loader (studies/study.h).
[[nodiscard]] std::unique_ptr<Study> pipeline_study_kind(const JsonCursor& root);

struct PipelineStudyRow {
  std::string group, case_name, method;
  double iteration_s = 0;
  double samples_per_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;  // tflops_per_gpu over the GPU's dense peak (pipeline::PipelineMetrics::mfu)
  double exposed_comm_s = 0;
  double gain = 0;  // throughput over the baseline method, − 1
};

/// The options a study runs with: fluid broadcasts, and the study's
/// calibration (its links into `t`, its compute models into `opts`) unless
/// the caller `calibrated` them already (a --calibration replaces the
/// study's own), then the study's compute efficiency for fp16 work.
/// Returns what each GPU model computes at (sim::apply_compute_efficiency).
std::string prepare_study_options(const PipelineStudy& s, topology::Topology& t, sim::SimOptions& opts,
                                  bool calibrated);

/// Every case with every method; `progress` (may be empty) after each case.
/// `load_model` reads a case's "model" (a file, or what the caller's
/// resolver accepts, such as a bundled model's name); empty: a file.
[[nodiscard]] std::vector<PipelineStudyRow> run_pipeline_study(
    const PipelineStudy& s, topology::Topology& t, const sim::SimOptions& opts,
    const std::function<void(std::size_t, std::size_t)>& progress = {},
    const std::function<model::Model(const std::string&)>& load_model = {});

/// The rows as results.csv and results.json list them (results.json also
/// gives each row its case's recompute, stage_starts and paper_gain).
[[nodiscard]] Results pipeline_results(const PipelineStudy& s, const std::vector<PipelineStudyRow>& rows);

}  // namespace meshsim::studies
