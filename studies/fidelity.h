#pragma once
// Fidelity report files (`meshsim.fidelity/1`): every published figure
// meshsim holds beside its own prediction of it, each row with the band it
// must reach (the target) and the band it may not leave (the bound).
//
// {"format": "meshsim.fidelity/1", "name": ..., "description": ...,
//  "terapipe": {"topology": file (relative), "compute_efficiency": 0.5,
//               "models": directory of model files (relative),
//               "rows": [{"setting": "(5)", "figure": "without" | "with" | "speedup" |
//                                                       "dp_over_uniform",
//                         "target": 0.20, "bound": 0.25},
//                        {"setting": "(9)", "figure": "slices", "slices": 16, ...}, ...]},
//  "pipeline": {"study": a meshsim.pipeline-study/1 file (relative),
//               "ours": method,
//               "order": [methods, fastest first],
//               "rows": [{"case": name, "target": [0.03, 0.25], "bound": [0.0, 0.3]}]},
//  "collectives": {"study": a meshsim.collective-study/1 file (relative)},
//  "gemms": measured GEMMs against the GEMM model (below)}
//
// Published values live where they are documented once: TeraPipe's
// measured times and its slice-count ablation in pipeline/terapipe_eval.h, each pipeline case's gain in
// its study (paper_gain), each collective figure in its study row. A
// relative row's target and bound are fractions: |ours / published − 1|
// may be at most that. A gain row's are ranges of the gain itself
// (throughput of `ours` over the study's paper_baseline, − 1). The bound defaults to the
// target; a wider bound states a known gap: the row is reported outside its
// target and the report still passes, until the row leaves its bound.
// Every case of the pipeline study also checks that its methods finish in
// the stated order (each at least as fast as the next).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "studies/collective_study.h"
#include "studies/pipeline_study.h"
#include "studies/study.h"

namespace meshsim::studies {

/// [lo, hi] of a row's value.
struct Band {
  double lo = 0;
  double hi = 0;
  [[nodiscard]] bool holds(double v) const { return v >= lo && v <= hi; }
};

enum class FigureKind { relative, range, order };

struct FidelityTeraPipeRow {
  std::string setting;  // "(5)"
  std::string figure;   // without, with, speedup, slices (the ablation's uniform slicing), dp_over_uniform
  int slices = 0;       // figure "slices": slices per sequence
  double target = 0;
  double bound = 0;
};

struct FidelityGainRow {
  std::string case_name;
  Band target;
  Band bound;
};

struct FidelityGemmRow {    // the "gemms" section (below)
  std::string calibration;  // the row's own, else the section's
  std::string model;
  int tp = 1;
  int microbatch = 1;
  double target = 0;
  double bound = 0;
};

struct Fidelity {
  std::string name;
  std::string description;
  // TeraPipe (empty rows: none).
  std::string terapipe_topology;
  std::optional<double> terapipe_efficiency;
  std::string terapipe_calibration;  // empty: none
  std::string terapipe_models;
  std::vector<FidelityTeraPipeRow> terapipe_rows;
  // A pipeline study's gains (none without the study).
  std::optional<PipelineStudy> pipeline;
  std::string ours;
  std::string baseline;  // the study's paper_baseline
  std::vector<std::string> order;
  std::vector<FidelityGainRow> gain_rows;
  // A collective study (none without it).
  std::optional<CollectiveStudy> collectives;
  // Measured GEMMs against the GEMM model (empty rows: none).
  std::string gemm_calibration;
  std::string gemm_models;
  std::vector<FidelityGemmRow> gemm_rows;
};

/// ConfigError with the JSON path on any mistake (a TeraPipe setting whose
/// times we do not hold, a case or method the pipeline study lacks, a bound
/// narrower than its target).
[[nodiscard]] Fidelity load_fidelity(const JsonCursor& root);
/// The registry's loader (studies/study.h): the report fails when a row
/// leaves its bound.
[[nodiscard]] std::unique_ptr<Study> fidelity_kind(const JsonCursor& root);

enum class Verdict { within_target, known_gap, outside_bound };

struct FidelityResult {
  std::string group;  // TeraPipe, the pipeline study's name, the collective study's name
  std::string name;
  std::string unit;  // s, x, gain, order, or the collective row's
  FigureKind kind = FigureKind::relative;
  double published = 0;
  double ours = 0;
  double error = 0;  // ours / published − 1 (relative and range rows)
  Band target;       // of the value
  Band bound;
  std::string source;
  Verdict verdict = Verdict::within_target;
};

/// Runs every row; `progress` (may be empty) is told what runs next.
[[nodiscard]] std::vector<FidelityResult> run_fidelity(
    const Fidelity& f, const std::function<void(const std::string&)>& progress);

/// A relative row's "target" and "bound" (the bound defaults to the
/// target): fractions above 0 and below 100. ConfigError (the row's JSON
/// path) otherwise, or for a bound narrower than the target.
[[nodiscard]] std::pair<double, double> relative_tolerance(const JsonCursor& row);
/// A relative row: |ours / published − 1| within target, else bound.
[[nodiscard]] FidelityResult fidelity_relative(std::string group, std::string name, std::string unit,
                                               double published, double ours, double target, double bound,
                                               std::string source);

[[nodiscard]] std::string_view to_string(Verdict v);
/// The rows as results.csv and results.json list them.
[[nodiscard]] Results fidelity_results(const std::vector<FidelityResult>& rows);

// The "gemms" section (studies/fidelity_gemms.cpp): the GEMM model
// (sim/compute_model.h, tiles and waves at the calibration's efficiency,
// launch and memory bandwidth, its measured shapes set aside) against the
// GEMMs a calibration measured on a GPU (`meshsim calibrate --layers`), one
// row per model, tensor-parallel degree and microbatch: Σ model time over
// the GEMMs against Σ measured time.
//
// A model whose layers list their kernels (the U-Nets) is compared over its
// whole forward and backward pass, every layer split by channels and, where
// the microbatch divides over the ranks, by batch (calibration_kernel_lists).
//
//   "gemms": {"calibration": file (relative), "models": directory (relative),
//             "rows": [{"model": "gpt3-13b", "tp": 8, "microbatch": 1,
//                       "target": 0.1, "bound": 0.15,
//                       "calibration": file (optional: this row's own)}]}

/// ConfigError (file, JSON path) for a row whose GEMMs the calibration did
/// not all measure, an unknown model, or a bound narrower than its target.
void load_fidelity_gemms(const std::string& file, const JsonCursor& g, Fidelity& f);
void run_fidelity_gemms(const Fidelity& f, const std::function<void(const std::string&)>& progress,
                        std::vector<FidelityResult>& out);

}  // namespace meshsim::studies
