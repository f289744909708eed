// `meshsim terapipe`: token-level pipelining (TeraPipe's DP) against no
// slicing and the best uniform slicing; `--paper` runs TeraPipe's settings
// (5), (8), (9) and (10) and prints the paper's measured times beside ours.

#include <chrono>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "planner/terapipe.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_option.h"
#include "tools/cli/table.h"
#include "tools/cli/topology_source.h"
#include "topology/topology_json.h"

namespace meshsim::cli {

namespace {

struct TeraPipeArgs {
  std::string model;
  TopologySource topology;
  CalibrationOption calibration;
  std::optional<double> compute_efficiency;
  int pp = 1;
  int op = 1;
  int batch = 1;
  int granularity = 8;
  bool paper = false;
  bool json = false;
};

struct Outcome {
  planner::TokenSlicing none, uniform, dp;
  planner::SliceCostModel cost_model;
  double dp_seconds = 0;  // wall time of the DP
};

Outcome evaluate(const planner::Model& model, const topology::Topology& topo, const sim::SimOptions& opts,
                 int pp, int op, int batch, int granularity) {
  const sim::DeviceModel* dm = sim::find_device_model(topo.node(topo.gpus().at(0)).model, opts.device_models);
  if (!dm) throw UsageError(fmt::format("{}'s GPUs have no compute model", topo.name));
  Outcome o;
  o.cost_model = planner::slice_cost_model(model, topo, pp, op);
  const auto cost = planner::slice_cost(model, o.cost_model, *dm);
  const auto seq = static_cast<int>(model.sequence);
  o.none = planner::uniform_slicing(seq, batch, pp, cost, 1, granularity);
  o.uniform = planner::uniform_slicing(seq, batch, pp, cost, seq / granularity, granularity);
  const auto t0 = std::chrono::steady_clock::now();
  o.dp = planner::terapipe_dp(seq, batch, pp, cost, granularity);
  o.dp_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

std::string describe(const planner::TokenSlicing& s) {
  // Microbatch sizes, then the first microbatch's slices (tokens).
  std::string mb = fmt::format("{} microbatch{} of {}", s.microbatches.size(),
                               s.microbatches.size() == 1 ? "" : "es", fmt::join(s.microbatches, "/"));
  const auto& sl = s.slices.front();
  std::string slices = sl.size() <= 12
                           ? fmt::format("{}", fmt::join(sl, " "))
                           : fmt::format("{} ... {} ({} slices)", fmt::join(sl.begin(), sl.begin() + 6, " "),
                                         fmt::join(sl.end() - 3, sl.end(), " "), sl.size());
  return fmt::format("{}; slices {}", mb, slices);
}

Json slicing_json(const planner::TokenSlicing& s) {
  return Json{{"time_s", s.time},
              {"max_slice_s", s.max_slice},
              {"microbatches", s.microbatches},
              {"slices", s.slices}};
}

// TeraPipe's measured iteration times (Li et al., ICML 2021).
struct PaperSetting {
  const char* id;
  const char* model;
  int gpus, batch, dp, pp, op;
  double without_s, with_s;
};
constexpr PaperSetting kPaper[] = {
    {"(5)", "gpt3-13b", 320, 32, 1, 40, 8, 1.863, 1.328},
    {"(8)", "gpt3-44b", 384, 8, 1, 48, 8, 2.662, 1.111},
    {"(9)", "gpt3-175b", 384, 2, 1, 96, 4, 9.990, 1.481},
    {"(10)", "gpt3-175b", 384, 2, 1, 48, 8, 5.822, 1.160},
};

void run_paper(TeraPipeArgs& a) {
  topology::Topology topo = a.topology.what.empty()
                                ? topology::load_topology_file(std::string(MESHSIM_SOURCE_DIR) +
                                                               "/configs/topologies/p3.16xlarge-x48.json")
                                : a.topology.load();
  sim::SimOptions opts;
  a.calibration.apply(topo, opts);
  std::string compute;
  Json rows = Json::array();
  Table tab({"setting", "model", "GPUs", "batch", "d/p/o", "paper w/o", "paper with", "paper x", "ours none",
             "ours uniform", "ours DP", "ours x", "DP/uniform"});
  for (const auto& s : kPaper) {
    const planner::Model model = load_model_arg(s.model);
    compute = apply_compute_efficiency(topo, opts, a.compute_efficiency, model.dtype);
    if (!a.json) fmt::print(stderr, "\rsetting {} ({})...   ", s.id, s.model);
    const Outcome o = evaluate(model, topo, opts, s.pp, s.op, s.batch, a.granularity);
    const double ours_x = o.none.time / o.dp.time;
    tab.add({s.id, s.model, std::to_string(s.gpus), std::to_string(s.batch),
             fmt::format("{}/{}/{}", s.dp, s.pp, s.op), fmt::format("{:.3f}", s.without_s),
             fmt::format("{:.3f}", s.with_s), fmt::format("{:.2f}x", s.without_s / s.with_s),
             fmt::format("{:.3f}", o.none.time), fmt::format("{:.3f}", o.uniform.time),
             fmt::format("{:.3f}", o.dp.time), fmt::format("{:.2f}x", ours_x),
             fmt::format("{:.3f}x", o.uniform.time / o.dp.time)});
    rows.push_back(Json{{"setting", s.id},
                        {"model", s.model},
                        {"gpus", s.gpus},
                        {"batch", s.batch},
                        {"dp", s.dp},
                        {"pp", s.pp},
                        {"op", s.op},
                        {"paper_without_s", s.without_s},
                        {"paper_with_s", s.with_s},
                        {"none", slicing_json(o.none)},
                        {"uniform", slicing_json(o.uniform)},
                        {"dp_result", slicing_json(o.dp)},
                        {"dp_seconds", o.dp_seconds}});
  }
  if (a.json) {
    fmt::print("{}",
               dump_json(Json{{"topology", topo.name}, {"compute", compute}, {"settings", std::move(rows)}}));
    return;
  }
  fmt::print(stderr, "\r{:40}\r", "");
  fmt::print("TeraPipe's settings on {} (iteration times in seconds; x = without / with slicing)\n",
             topo.name);
  fmt::print("compute {}\n\n{}", compute,
             tab.render({false, false, true, true, false, true, true, true, true, true, true, true, true}));
  fmt::print(
      "\nours: no slicing and uniform slicing use equal microbatches (the best divisor of the batch);\n"
      "the DP also chooses microbatch sizes (knapsack). The paper's DP gains over uniform: 1.12x (44B),\n"
      "1.04x (175B).\n");
}

void run_terapipe(TeraPipeArgs& a) {
  if (a.paper) {
    run_paper(a);
    return;
  }
  if (a.model.empty() || a.topology.what.empty())
    throw UsageError("terapipe needs --model and --topology (or --paper)");
  const planner::Model model = load_model_arg(a.model);
  topology::Topology topo = a.topology.load();
  sim::SimOptions opts;
  a.calibration.apply(topo, opts);
  const std::string compute = apply_compute_efficiency(topo, opts, a.compute_efficiency, model.dtype);
  const Outcome o = evaluate(model, topo, opts, a.pp, a.op, a.batch, a.granularity);
  if (a.json) {
    fmt::print("{}", dump_json(Json{{"model", model.name},
                                    {"topology", topo.name},
                                    {"pp", a.pp},
                                    {"op", a.op},
                                    {"batch", a.batch},
                                    {"granularity", a.granularity},
                                    {"compute", compute},
                                    {"none", slicing_json(o.none)},
                                    {"uniform", slicing_json(o.uniform)},
                                    {"dp", slicing_json(o.dp)},
                                    {"dp_caps_tried", o.dp.caps_tried},
                                    {"dp_seconds", o.dp_seconds}}));
    return;
  }
  fmt::print(
      "terapipe {} on {}: {} stages x op {} ({} layers per stage), batch {}, sequence {} in units of {}\n",
      model.name, topo.name, a.pp, a.op, o.cost_model.layers_per_stage, a.batch, model.sequence,
      a.granularity);
  fmt::print("compute {}\n", compute);
  fmt::print("tensor all-reduce {:.1f} us + {:.2f} GB/s; stage send {:.1f} us + {:.2f} GB/s\n\n",
             o.cost_model.tp_allreduce.alpha * 1e6,
             o.cost_model.tp_allreduce.beta > 0 ? 1e-9 / o.cost_model.tp_allreduce.beta : 0.0,
             o.cost_model.stage_send.alpha * 1e6,
             o.cost_model.stage_send.beta > 0 ? 1e-9 / o.cost_model.stage_send.beta : 0.0);
  Table tab({"method", "iteration s", "largest slice ms", "speedup", "plan"});
  for (const auto& [name, s] : {std::pair<const char*, const planner::TokenSlicing*>{"no slicing", &o.none},
                                {"best uniform", &o.uniform},
                                {"TeraPipe DP", &o.dp}})
    tab.add({name, fmt::format("{:.3f}", s->time), fmt::format("{:.2f}", s->max_slice * 1e3),
             fmt::format("{:.2f}x", o.none.time / s->time), describe(*s)});
  fmt::print("{}", tab.render({false, true, true, true, false}));
  fmt::print("\nDP: {} caps tried in {:.3f} s\n", o.dp.caps_tried, o.dp_seconds);
}

}  // namespace

void add_terapipe_command(CLI::App& app) {
  auto a = std::make_shared<TeraPipeArgs>();
  auto* cmd = app.add_subcommand(
      "terapipe", "Token-level pipelining (TeraPipe): the slicing DP against no and uniform slicing");
  cmd->footer(
      "Stage p runs on GPUs [p*op, (p+1)*op) with Megatron tensor parallelism of degree op. A slice's\n"
      "cost is its forward and backward on one stage (roofline per layer, KV-cache reads, launch\n"
      "overheads, 4 tensor all-reduces per layer) plus its activation and gradient crossing the\n"
      "slowest stage boundary; all-reduce and send costs are fitted from simulations on the topology.\n"
      "Examples: meshsim terapipe --model gpt3-175b --topology configs/topologies/p3.16xlarge-x48.json \\\n"
      "            --pp 48 --op 8 --batch 2\n"
      "          meshsim terapipe --paper --compute-efficiency 0.5");
  cmd->add_option("--model", a->model, "Model: a meshsim.model/1 GPT file or a name from configs/models/");
  a->topology.add_to(*cmd, "--topology", false);
  a->calibration.add_to(*cmd);
  add_compute_efficiency_option(*cmd, a->compute_efficiency);
  cmd->add_option("--pp", a->pp, "Pipeline stages K")->check(CLI::PositiveNumber)->default_val(1);
  cmd->add_option("--op", a->op, "Tensor (operator) parallel degree per stage")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option("--batch", a->batch, "Sequences per iteration (split into microbatches)")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option("--granularity", a->granularity, "Slice lengths in units of this many tokens")
      ->check(CLI::PositiveNumber)
      ->default_val(8);
  cmd->add_flag("--paper", a->paper,
                "Run TeraPipe's settings (5), (8), (9), (10) (default topology p3.16xlarge-x48) and print "
                "the paper's measured times beside ours");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a] { run_terapipe(*a); });
}

}  // namespace meshsim::cli
