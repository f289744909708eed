// `meshsim terapipe`: token-level pipelining (TeraPipe's DP) against no
// slicing and the best uniform slicing; `--paper` runs the TeraPipe
// settings whose measured times we hold and prints them beside ours.

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "hardware/gpus.h"
#include "pipeline/terapipe.h"
#include "pipeline/terapipe_eval.h"
#include "sim/compute_model.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_option.h"
#include "tools/cli/options.h"
#include "tools/cli/progress.h"
#include "tools/cli/topology_source.h"
#include "topology/topology_json.h"

namespace meshsim::cli {

namespace {

using Shape = pipeline::TeraPipeShape;
using Outcome = pipeline::TeraPipeOutcome;

struct TeraPipeArgs {
  std::string model;
  TopologySource topology;
  CalibrationOption calibration;
  std::optional<double> compute_efficiency;
  Shape shape;
  std::optional<std::string> host_per_kernel;  // a duration; --paper's default is the paper's
  bool paper = false;
  bool json = false;
};

// The --host-per-kernel figure in seconds (`eager`: that of `topo`'s GPUs in `models`), or `otherwise`.
double host_per_kernel(const TeraPipeArgs& a, double otherwise, const topology::Topology& topo,
                       const std::vector<sim::DeviceModel>& models) {
  return a.host_per_kernel ? host_per_kernel_value(a.host_per_kernel, Time::zero(), topo, models).seconds()
                           : otherwise;
}

std::string describe(const pipeline::TokenSlicing& s) {
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

// time_s: the iteration (pipeline + gradient all-reduce); pipeline_s: the slicing's T.
Json slicing_json(const pipeline::TokenSlicing& s, const Outcome& o) {
  return Json{{"time_s", o.iteration(s)},
              {"pipeline_s", s.time},
              {"max_slice_s", s.max_slice},
              {"microbatches", s.microbatches},
              {"slices", s.slices}};
}

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
  const auto settings = pipeline::terapipe_paper_settings();
  const auto progress = progress_reporter("TeraPipe's settings", "done", a.json);
  const double host =
      host_per_kernel(a, pipeline::terapipe_paper_host_per_kernel(), topo, opts.device_models);
  for (const auto& s : settings) {
    progress(static_cast<std::size_t>(&s - settings.data()), settings.size());
    const model::Model model = load_model_arg(std::string(s.model));
    compute = sim::apply_compute_efficiency(topo, opts.device_models, a.compute_efficiency, model.dtype);
    Shape sh = pipeline::paper_shape(s);  // with the user's granularity, ablation and memory limit
    sh.granularity = a.shape.granularity;
    sh.uniform_slices = a.shape.uniform_slices;
    sh.memory_limit = a.shape.memory_limit;
    sh.host_per_kernel = host;
    const Outcome o = pipeline::evaluate_terapipe(model, topo, opts, sh);
    const double ours_x = o.iteration(o.none) / o.iteration(o.dp);
    tab.add({std::string(s.id), std::string(s.model), std::to_string(s.gpus), std::to_string(s.batch),
             fmt::format("{}/{}/{}", s.dp, s.pp, s.op), fmt::format("{:.3f}", s.without_s),
             fmt::format("{:.3f}", s.with_s), fmt::format("{:.2f}x", s.without_s / s.with_s),
             fmt::format("{:.3f}", o.iteration(o.none)), fmt::format("{:.3f}", o.iteration(o.uniform)),
             fmt::format("{:.3f}", o.iteration(o.dp)), fmt::format("{:.2f}x", ours_x),
             fmt::format("{:.3f}x", o.iteration(o.uniform) / o.iteration(o.dp))});
    rows.push_back(Json{{"setting", s.id},
                        {"model", s.model},
                        {"gpus", s.gpus},
                        {"batch", s.batch},
                        {"dp", s.dp},
                        {"pp", s.pp},
                        {"op", s.op},
                        {"paper_without_s", s.without_s},
                        {"paper_with_s", s.with_s},
                        {"none", slicing_json(o.none, o)},
                        {"uniform", slicing_json(o.uniform, o)},
                        {"dp_result", slicing_json(o.dp, o)},
                        {"grad_allreduce_s", o.cost_model.grad_allreduce_s},
                        {"update_s", o.cost_model.update_s},
                        {"host_per_kernel_s", sh.host_per_kernel},
                        {"max_microbatch", o.max_microbatch},
                        {"dp_seconds", o.dp_seconds}});
    if (sh.uniform_slices > 0) rows.back()["uniform_fixed"] = slicing_json(o.fixed, o);
    if (s.dp_over_uniform > 0) rows.back()["paper_dp_over_uniform"] = s.dp_over_uniform;
  }
  progress(settings.size(), settings.size());
  if (a.json) {
    fmt::print("{}",
               dump_json(Json{{"topology", topo.name}, {"compute", compute}, {"settings", std::move(rows)}}));
    return;
  }
  fmt::print("TeraPipe's settings on {} (iteration times in seconds; x = without / with slicing)\n",
             topo.name);
  fmt::print(
      "compute {}\nhost work per launched kernel: {}\n\n{}", compute,
      fmt::format("{:.1f} us ({})", host * 1e6,
                  a.host_per_kernel ? std::string("--host-per-kernel")
                                    : fmt::format("the paper's Fig. 3: 1.45 ms per GPT-3 1B layer forward "
                                                  "up to 256 tokens on a {}, over its kernels",
                                                  hardware::kV100.name)),
      tab.render({false, false, true, true, false, true, true, true, true, true, true, true, true}));
  fmt::print(
      "\nours: no slicing and uniform slicing use equal microbatches (the best divisor of the batch);\n"
      "the DP also chooses microbatch sizes (knapsack). The paper's DP gain over the best uniform slicing:\n"
      "1.04x on the 175B (setting (9), by its times); 1.12x on a 44B setting it does not name.\n");
}

void run_terapipe(TeraPipeArgs& a) {
  if (a.paper) {
    run_paper(a);
    return;
  }
  if (a.model.empty() || a.topology.what.empty())
    throw UsageError("terapipe needs --model and --topology (or --paper)");
  const model::Model model = load_model_arg(a.model);
  topology::Topology topo = a.topology.load();
  sim::SimOptions opts;
  a.calibration.apply(topo, opts);
  const std::string compute =
      sim::apply_compute_efficiency(topo, opts.device_models, a.compute_efficiency, model.dtype);
  Shape sh = a.shape;
  sh.host_per_kernel = host_per_kernel(a, 0, topo, opts.device_models);
  const Outcome o = pipeline::evaluate_terapipe(
      model, topo, opts, sh, progress_reporter("terapipe: the slicing DP", "caps", a.json));
  if (a.json) {
    Json j{{"model", model.name},
           {"topology", topo.name},
           {"pp", sh.pp},
           {"op", sh.op},
           {"data_parallel", sh.dp},
           {"batch", sh.batch},
           {"granularity", sh.granularity},
           {"compute", compute},
           {"host_per_kernel_s", sh.host_per_kernel},
           {"max_microbatch", o.max_microbatch},
           {"grad_allreduce_s", o.cost_model.grad_allreduce_s},
           {"update_s", o.cost_model.update_s},
           {"none", slicing_json(o.none, o)},
           {"uniform", slicing_json(o.uniform, o)},
           {"dp", slicing_json(o.dp, o)},
           {"dp_caps_tried", o.dp.caps_tried},
           {"dp_seconds", o.dp_seconds}};
    if (sh.uniform_slices > 0) j["uniform_fixed"] = slicing_json(o.fixed, o);
    fmt::print("{}", dump_json(j));
    return;
  }
  fmt::print(
      "terapipe {} on {}: {} replicas x {} stages x op {} ({} layers per stage), batch {} ({} per replica), "
      "sequence {} in units of {}\n",
      model.name, topo.name, sh.dp, sh.pp, sh.op, o.cost_model.layers_per_stage, sh.batch, sh.batch / sh.dp,
      model.sequence, sh.granularity);
  fmt::print("compute {}\n", compute);
  if (sh.host_per_kernel > 0)
    fmt::print(
        "host work per launched kernel: {:.1f} us (a layer takes the longer of its GPU and host time)\n",
        sh.host_per_kernel * 1e6);
  const auto kGiB = static_cast<double>(Bytes::GiB(1).count());
  fmt::print("memory per GPU: {:.2f} GiB of training state + {:.2f} GiB per sequence of a microbatch; {}\n",
             o.cost_model.state_bytes / kGiB, o.cost_model.activation_bytes / kGiB,
             o.max_microbatch > 0 ? fmt::format("microbatches of at most {} sequences fit in {:.0f} GiB",
                                                o.max_microbatch, o.capacity / kGiB)
                                  : std::string("no limit (--no-memory-limit)"));
  if (sh.dp > 1)
    fmt::print("gradient all-reduce over the {} replicas after the pipeline: {:.3f} s\n", sh.dp,
               o.cost_model.grad_allreduce_s);
  fmt::print("weight update after the pipeline: {:.1f} ms\n", o.cost_model.update_s * 1e3);
  auto rate = [](const pipeline::AlphaBeta& ab) { return ab.beta > 0 ? 1e-9 / ab.beta : 0.0; };
  fmt::print(
      "tensor all-reduce {:.1f} us + {:.2f} GB/s; tensor broadcast {:.1f} us + {:.2f} GB/s; stage send "
      "{:.1f} us + "
      "{:.2f} GB/s\n\n",
      o.cost_model.tp_allreduce.alpha * 1e6, rate(o.cost_model.tp_allreduce),
      o.cost_model.tp_broadcast.alpha * 1e6, rate(o.cost_model.tp_broadcast),
      o.cost_model.stage_send.alpha * 1e6, rate(o.cost_model.stage_send));
  Table tab({"method", "iteration s", "largest slice ms", "speedup", "plan"});
  std::vector<std::pair<std::string, const pipeline::TokenSlicing*>> rows{
      {"no slicing", &o.none}, {"best uniform", &o.uniform}, {"TeraPipe DP", &o.dp}};
  if (sh.uniform_slices > 0)
    rows.insert(rows.begin() + 2, {fmt::format("{} slices, mb 1", sh.uniform_slices), &o.fixed});
  for (const auto& [name, s] : rows)
    tab.add({name, fmt::format("{:.3f}", o.iteration(*s)), fmt::format("{:.2f}", s->max_slice * 1e3),
             fmt::format("{:.2f}x", o.iteration(o.none) / o.iteration(*s)), describe(*s)});
  fmt::print("{}", tab.render({false, true, true, true, false}));
  fmt::print("\nDP: {} caps tried in {:.3f} s\n", o.dp.caps_tried, o.dp_seconds);
}

}  // namespace

void add_terapipe_command(CLI::App& app) {
  auto a = std::make_shared<TeraPipeArgs>();
  auto* cmd = app.add_subcommand(
      "terapipe", "Token-level pipelining (TeraPipe): the slicing DP against no and uniform slicing");
  cmd->footer(
      "Replica r of stage p (of K) runs on GPUs [(r*K + p)*op, (r*K + p + 1)*op) with Megatron tensor\n"
      "parallelism of degree op (tensor ranks, then stages, then replicas). A slice's cost is its\n"
      "forward and backward on one stage (per layer, its GEMMs timed in tiles and waves over the SMs,\n"
      "its memory-bound kernels, a launch each, the KV-cache reads, the weight-gradient accumulation\n"
      "that each slice's backward adds, and 4 tensor all-reduces) plus its\n"
      "activation and gradient crossing the slowest stage boundary; all-reduce and send costs are\n"
      "fitted from simulations on the topology with every replica's transfers at once. With --dp, the\n"
      "iteration adds the gradient all-reduce over the replicas (simulated). A microbatch must fit in\n"
      "GPU memory: training state (16 bytes per parameter) plus its stored activations. An eager framework\n"
      "works on the host for every kernel it launches (--host-per-kernel; tools/framework_overhead.py\n"
      "measures it with PyTorch on a GPU): a layer then takes the longer of its GPU and host time, and\n"
      "thin slices become host-bound. --paper uses the paper's own figure for its PyTorch code.\n"
      "Examples: meshsim terapipe --model gpt3-175b --topology configs/topologies/p3.16xlarge-x48.json \\\n"
      "            --pp 48 --op 8 --batch 2\n"
      "          meshsim terapipe --paper --calibration configs/calibrations/v100-deepbench.json");
  cmd->add_option("--model", a->model, "Model: a meshsim.model/1 GPT file or a name from configs/models/");
  a->topology.add_to(*cmd, "--topology", false);
  a->calibration.add_with_profile_to(*cmd);
  add_compute_efficiency_option(*cmd, a->compute_efficiency);
  cmd->add_option("--pp", a->shape.pp, "Pipeline stages K")->check(CLI::PositiveNumber)->default_val(1);
  cmd->add_option("--op", a->shape.op, "Tensor (operator) parallel degree per stage")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option("--dp", a->shape.dp, "Data-parallel replicas (the batch is split over them)")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option("--batch", a->shape.batch,
                  "Sequences per iteration, over all replicas (split into microbatches)")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option(
         "--uniform-slices", a->shape.uniform_slices,
         "Also time microbatches of one sequence cut into exactly N equal slices (the paper's ablation)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-memory-limit{false}", a->shape.memory_limit,
                "Consider microbatches whatever their memory (by default a microbatch must fit in the GPU's "
                "memory beside the training state)");
  cmd->add_option("--granularity", a->shape.granularity, "Slice lengths in units of this many tokens")
      ->check(CLI::PositiveNumber)
      ->default_val(8);
  add_host_per_kernel_option(
      *cmd, a->host_per_kernel,
      fmt::format("default 0, a program launched without host work per kernel; with --paper, the paper's "
                  "{:.1f}us",
                  pipeline::terapipe_paper_host_per_kernel() * 1e6));
  cmd->add_flag(
      "--paper", a->paper,
      "Run TeraPipe's settings (1), (5), (6), (8), (9), (10) (default topology p3.16xlarge-x48) and "
      "print the paper's measured times beside ours");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a] { run_terapipe(*a); });
}

}  // namespace meshsim::cli
