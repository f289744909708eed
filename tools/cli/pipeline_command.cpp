// `meshsim pipeline`: one training iteration of a pipeline-, tensor- and
// data-parallel model, built as a Plan and simulated.

#include <chrono>
#include <filesystem>
#include <memory>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "hardware/gpus.h"
#include "pipeline/iteration.h"
#include "pipeline/layer_split.h"
#include "pipeline/layout.h"
#include "pipeline/phases.h"
#include "plan/phases.h"
#include "plan/plan_json.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/cost_output.h"
#include "tools/cli/model_option.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/pipeline_plot.h"
#include "tools/cli/pipeline_report.h"
#include "tools/cli/topology_source.h"
#include "tools/cli/trace_option.h"
#include "topology/placement.h"
#include "traces/kineto.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

namespace {

struct PipelineArgs {
  std::string model;
  TopologySource topology;
  CalibrationOption calibration;
  std::optional<double> compute_efficiency;
  pipeline::PipelineConfig cfg;
  std::string schedule = "1f1b";
  std::string reshard = "broadcast";
  std::string balance = "host-size";
  std::string layer_split = "auto";
  std::string trace;
  TraceDetailOption trace_detail;
  std::string plan_out;
  std::string plot;
  bool json = false;
  bool chunked_broadcasts = false;
  std::string recompute = "none";
  int zero = 0;
  std::string memory_reserve = exact_string(model::kDefaultReserve);
  std::optional<std::string> host_per_kernel;
  bool uncertainty = false;
  std::string measured;  // a profiler trace of one iteration on one rank
  std::optional<int> measured_step;
  std::string compare_trace;  // both timelines, one above the other
};

PipelineRun build_and_simulate(PipelineArgs& a, sim::SpreadEnd end = sim::SpreadEnd::value) {
  PipelineRun run{load_model_arg(a.model),
                  a.topology.load(),
                  a.cfg,
                  {},
                  {},
                  {},
                  {},
                  0,
                  0,
                  {},
                  {},
                  0,
                  {},
                  a.schedule,
                  a.reshard,
                  a.balance};
  sim::SimOptions opts;
  a.calibration.apply(run.topo, opts, end);
  pipeline::PipelineConfig& cfg = run.cfg;
  cfg.schedule = *model::schedule_from(a.schedule);
  cfg.reshard_auto = a.reshard == "auto";
  if (!cfg.reshard_auto) cfg.reshard = *reshard::strategy_from(a.reshard);
  cfg.balance = *reshard::balance_from(a.balance);
  cfg.layer_split = model::kLayerSplitNames.parse(a.layer_split);  // nullopt for auto
  cfg.payloads = !a.plan_out.empty();  // a plan for the runtime carries what it verifies
  cfg.recompute = a.recompute.empty() ? model::Recompute::full : *model::kRecomputeNames.parse(a.recompute);
  cfg.zero = static_cast<model::ZeroStage>(a.zero);
  cfg.memory_reserve = option_value("--memory-reserve", a.memory_reserve, parse_bytes);
  run.compute_models =
      sim::apply_compute_efficiency(run.topo, opts.device_models, a.compute_efficiency, run.model.dtype);
  if (cfg.fp8) run.compute_models += "; FP8 GEMMs: " + sim::fp8_compute_line(run.topo, opts.device_models);
  cfg.host_per_kernel = host_per_kernel_value(a.host_per_kernel, Time::zero(), run.topo, opts.device_models);
  run.placed = topology::place_job(run.topo, pipeline::job_hosts(run.topo, cfg));
  const auto t0 = std::chrono::steady_clock::now();
  run.it = pipeline::build_pipeline(run.model, run.topo, cfg, opts.device_models);
  const auto t1 = std::chrono::steady_clock::now();
  opts.record_link_timeline = !a.trace.empty();
  opts.fluid_broadcast = !a.chunked_broadcasts;
  run.r = sim::simulate(run.it.plan, run.topo, opts);
  const auto t2 = std::chrono::steady_clock::now();
  run.pm = pipeline::pipeline_metrics(run.it, run.topo, run.r);
  run.build_s = std::chrono::duration<double>(t1 - t0).count();
  run.sim_s = std::chrono::duration<double>(t2 - t1).count();
  if (const sim::DeviceModel* dm =
          sim::find_device_model(run.topo.node(run.topo.gpus()[0]).model, opts.device_models)) {
    run.gpu = dm->name;
    run.capacity = static_cast<double>(dm->memory_capacity.count());
  }
  return run;
}

// `--schedule all`: every schedule on the same configuration, one row each
// (interleaved-1f1b with --virtual-stages, 2 when not given); a schedule the
// configuration does not allow gets its reason instead of figures.
void run_all_schedules(const PipelineArgs& a) {
  if (!a.trace.empty() || !a.plan_out.empty())
    throw UsageError("--trace and --plan-out write one iteration: name one --schedule");
  GanttRows gantt;  // --plot: every schedule's iteration, one above the other
  Table tab({"schedule", "iteration", "samples/s", "TFLOP/s/GPU", "MFU", "idle", "bubble ratio", "peak GiB",
             "fits"});
  Json rows = Json::array();
  std::string best;
  double best_s = 0;
  std::string header;
  for (const std::string& name : model::kScheduleNames.names()) {
    PipelineArgs one = a;
    one.schedule = name;
    const bool interleaved = name == "interleaved-1f1b";
    one.cfg.virtual_stages = interleaved ? std::max(2, a.cfg.virtual_stages) : 1;
    const std::string label = interleaved ? fmt::format("{} (v = {})", name, one.cfg.virtual_stages) : name;
    try {
      const PipelineRun run = build_and_simulate(one);
      if (!a.plot.empty()) gantt.add(label, run.it, run.topo, run.r);
      if (header.empty())
        header = fmt::format("pipeline {} on {}: {}, {} microbatches of {}{}\ncompute {}\n\n", run.model.name,
                             run.topo.name, model::degrees(a.cfg), a.cfg.microbatches, a.cfg.microbatch_size,
                             describe_training(run.cfg), run.compute_models);
      double peak = 0;
      bool fits = true;
      for (const auto& m : run.it.memory) {
        peak = std::max(peak, m.total());
        fits = fits && run.fits(m);
      }
      const auto& pm = run.pm;
      tab.add({label, human_string(run.r.makespan), fmt::format("{:.2f}", pm.samples_per_s),
               fmt::format("{:.1f}", pm.tflops_per_gpu), fmt::format("{:.1f} %", 100 * pm.mfu),
               fmt::format("{:.1f} %", 100 * pm.idle_fraction), fmt::format("{:.3f}", pm.bubble), gib(peak),
               fits ? "yes" : "NO"});
      rows.push_back(Json{{"schedule", name},
                          {"virtual_stages", one.cfg.virtual_stages},
                          {"iteration_s", pm.iteration_s},
                          {"samples_per_s", pm.samples_per_s},
                          {"tflops_per_gpu", pm.tflops_per_gpu},
                          {"mfu", pm.mfu},
                          {"idle_fraction", pm.idle_fraction},
                          {"bubble", pm.bubble},
                          {"peak_memory_bytes", peak},
                          {"fits", fits}});
      if (fits && (best.empty() || pm.iteration_s < best_s)) {
        best = label;
        best_s = pm.iteration_s;
      }
    } catch (const UsageError& e) {
      tab.add({label, "-", "-", "-", "-", "-", "-", "-"});
      rows.push_back(
          Json{{"schedule", name}, {"virtual_stages", one.cfg.virtual_stages}, {"error", e.what()}});
      if (!a.json) header += fmt::format("{}: {}\n", label, e.what());
    }
  }
  if (!a.plot.empty() && !gantt.csv.empty())
    plot_pipeline_gantt(a.plot, gantt,
                        fmt::format("{}: {}, {} microbatches, every schedule", a.model, model::degrees(a.cfg),
                                    a.cfg.microbatches));
  if (a.json) {
    fmt::print("{}", dump_json(Json{{"schedules", rows}, {"best", best}}));
    return;
  }
  fmt::print("{}{}", header, header.ends_with("\n\n") ? "" : "\n");
  fmt::print("{}", tab.render({false, true, true, true, true, true, true, true, false}));
  fmt::print("idle: mean share of the iteration a GPU runs no pass; bubble ratio: idle / pass time\n");
  if (best.empty())
    fmt::print("\nno schedule fits in memory\n");
  else
    fmt::print("\nfastest that fits: {}\n", best);
  if (!a.plot.empty() && !gantt.csv.empty()) fmt::print("chart: {}\n", a.plot);
}

// --measured: the profiled rank's phases against the prediction for its
// GPU (rank r is the cluster's r-th GPU, as ranks are laid out), printed
// (or added to `doc`), and both timelines into --compare-trace.
void compare_with_measured(const PipelineArgs& a, const PipelineRun& run, Json* doc) {
  const traces::MeasuredStep m = traces::load_kineto_step(a.measured, a.measured_step);
  const auto gpus = run.topo.gpus();
  if (m.rank < 0 || m.rank >= run.cfg.gpus() || static_cast<std::size_t>(m.rank) >= gpus.size())
    throw UsageError(fmt::format("{} profiled rank {}, and this layout has ranks 0 to {}", a.measured, m.rank,
                                 run.cfg.gpus() - 1));
  const std::string gpu = run.topo.node(gpus[static_cast<std::size_t>(m.rank)]).name;
  const auto predicted = pipeline::gpu_phases(run.it, run.r, gpu);
  const auto rows = plan::compare_phases(predicted, m.events);
  const double span_error = run.r.makespan.seconds() / m.span.seconds() - 1;
  if (!a.compare_trace.empty())
    write_file(a.compare_trace, [&](std::ostream& out) {
      traces::write_side_by_side_trace(
          out, m.events, fmt::format("measured: rank {} {} ({})", m.rank, m.step, m.gpu), predicted,
          fmt::format("predicted: {} ({})", gpu,
                      run.topo.node(gpus[static_cast<std::size_t>(m.rank)]).model));
    });
  if (doc != nullptr) {
    Json phases = Json::array();
    for (const auto& r : rows)
      phases.push_back(Json{{"phase", std::string(plan::kPhaseNames.name(r.phase))},
                            {"predicted_s", r.predicted.seconds()},
                            {"measured_s", r.measured.seconds()},
                            {"error", r.error ? Json(*r.error) : Json(nullptr)}});
    (*doc)["measured"] = Json{{"file", a.measured},
                              {"rank", m.rank},
                              {"gpu", m.gpu},
                              {"step", m.step},
                              {"predicted_gpu", gpu},
                              {"iteration_s", m.span.seconds()},
                              {"iteration_error", span_error},
                              {"phases", std::move(phases)}};
    return;
  }
  fmt::print("\nmeasured: {} of rank {} of {} on {} ({}), against the prediction for {}\n", m.step, m.rank,
             m.world_size, m.gpu.empty() ? std::string("a GPU") : m.gpu, a.measured, gpu);
  Table t({"phase (GPU busy time)", "predicted", "measured", "error"});
  t.add({"iteration (first to last GPU work)", human_string(run.r.makespan), human_string(m.span),
         fmt::format("{:+.1f} %", 100 * span_error)});
  for (const auto& r : rows)
    t.add({std::string(plan::kPhaseNames.name(r.phase)), human_string(r.predicted), human_string(r.measured),
           r.error ? fmt::format("{:+.1f} %", 100 * *r.error) : std::string("-")});
  fmt::print("{}", t.render({false, true, true, true}));
  if (!a.compare_trace.empty())
    fmt::print("both timelines: {} (open in ui.perfetto.dev; measured above, predicted below)\n",
               a.compare_trace);
}

void run_pipeline(PipelineArgs& a) {
  if (a.schedule == "all") {
    if (a.uncertainty) throw UsageError("--uncertainty gives one schedule's band: name one --schedule");
    run_all_schedules(a);
    return;
  }
  PipelineRun run = build_and_simulate(a);
  if (a.uncertainty) {
    PipelineArgs quiet = a;  // the band's runs write nothing
    quiet.trace.clear();
    quiet.plan_out.clear();
    quiet.plot.clear();
    run.band = {build_and_simulate(quiet, sim::SpreadEnd::low).pm,
                build_and_simulate(quiet, sim::SpreadEnd::high).pm};
  }
  if (!a.plan_out.empty())
    write_input_file(
        a.plan_out, [&](std::ostream& out) { plan::write_plan_json(run.it.plan, out); },
        "fewer microbatches, replicas or stages make a smaller plan");
  if (!a.trace.empty()) write_trace(a.trace, a.trace_detail.value(), run.it.plan, run.topo, run.r);
  if (!a.plot.empty()) {
    GanttRows rows;
    rows.add("", run.it, run.topo, run.r);
    plot_pipeline_gantt(a.plot, rows,
                        fmt::format("{} on {}: {}, {}, {} microbatches", run.model.name, run.topo.name,
                                    model::degrees(run.cfg), a.schedule, run.cfg.microbatches));
  }
  if (!a.compare_trace.empty() && a.measured.empty())
    throw UsageError("--compare-trace draws a measured trace beside the prediction: give it with --measured");
  if (a.json) {
    Json doc = pipeline_json(run);
    if (!a.measured.empty()) compare_with_measured(a, run, &doc);
    fmt::print("{}", dump_json(doc));
    return;
  }
  print_pipeline_text(run);
  if (!a.trace.empty()) fmt::print("trace: {} (open in ui.perfetto.dev)\n", a.trace);
  if (!a.plot.empty()) fmt::print("chart: {}\n", a.plot);
  if (!a.measured.empty()) compare_with_measured(a, run, nullptr);
}

}  // namespace

void add_pipeline_command(CLI::App& app) {
  auto a = std::make_shared<PipelineArgs>();
  auto* cmd = app.add_subcommand(
      "pipeline", "Simulate one training iteration of a model under data, tensor and pipeline parallelism");
  cmd->footer(
      "Ranks follow Megatron: tensor rank fastest, then context rank, then data replica, then\n"
      "pipeline stage, over the topology's GPUs. Layers are split into contiguous stages balancing\n"
      "forward FLOPs, or as --stage-starts says. Each pass is one compute task on the stage's\n"
      "tensor-parallel GPUs (in lockstep) plus their all-reduce;\n"
      "activations and gradients between stages go through the resharding planner (--reshard);\n"
      "gradients are all-reduced over the data replicas as soon as a stage's last backward is done.\n"
      "Idle = the share of the iteration a GPU runs no pass; bubble ratio = idle / pass time (Megatron's);\n"
      "exposed communication = communication on the critical path. --schedule all compares the schedules.\n"
      "Example: meshsim pipeline --model gpt3-1.3b --topology dgx-a100 --hosts 2 --dp 2 --tp 2 --pp 2 \\\n"
      "           --microbatches 8 --schedule 1f1b --trace pipe.json");
  add_model_option(*cmd, a->model);
  a->topology.add_to(*cmd, "--topology");
  a->topology.add_placement_to(*cmd);
  a->topology.add_cost_to(*cmd);
  a->calibration.add_with_profile_to(*cmd);
  add_compute_efficiency_option(*cmd, a->compute_efficiency);
  cmd->add_option("--measured", a->measured,
                  "A PyTorch profiler (Kineto) trace of one iteration of this layout on one rank: print its "
                  "phases (forward, backward, optimizer, each kind of communication) beside the prediction "
                  "for that rank's GPU, with the error of each")
      ->check(CLI::ExistingFile);
  cmd->add_option("--measured-step", a->measured_step,
                  "With --measured: the ProfilerStep#N to compare (default: the trace's last)");
  cmd->add_option("--compare-trace", a->compare_trace,
                  "With --measured: write both timelines, measured above predicted, as one Perfetto trace")
      ->check(output_file());
  cmd->add_flag("--uncertainty", a->uncertainty,
                "Also run with every profile figure at the slow end of its spread, then the fast end, and "
                "report the iteration time and MFU as a band (a calibration's measured figures have none)");
  cmd->add_option("--dp", a->cfg.dp, "Data-parallel degree")->check(CLI::PositiveNumber)->default_val(1);
  cmd->add_option("--tp", a->cfg.tp, "Tensor-parallel degree (Megatron, inside a stage)")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option("--pp", a->cfg.pp, "Pipeline stages (devices)")->check(CLI::PositiveNumber)->default_val(1);
  cmd->add_option("--cp", a->cfg.cp,
                  "Context parallelism (ring attention; needs --flash-attention): this many ranks share "
                  "each sequence, s/cp tokens each, gathering each layer's keys and values beside the "
                  "attention; gradients are reduced over dp x cp")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option("--microbatches,-m", a->cfg.microbatches, "Microbatches per iteration")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option("--microbatch-size,-b", a->cfg.microbatch_size, "Samples per microbatch")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option(
         "--schedule", a->schedule,
         "Pipeline schedule, or all: every schedule side by side (interleaved with --virtual-stages, "
         "default 2)")
      ->check(CLI::IsMember(with(model::kScheduleNames.names(), {"all"})))
      ->capture_default_str();
  cmd->add_option("--virtual-stages,-v", a->cfg.virtual_stages,
                  "Model chunks per device (interleaved-1f1b; microbatches must be a multiple of pp)")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option("--stage-starts", a->cfg.stage_starts,
                  "First layer of each stage, comma-separated from 0 (e.g. 0,7): a split fixed by hand "
                  "instead of the one balancing forward FLOPs")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-overlap{false}", a->cfg.overlap,
                "Stage transfers run on the compute stream of both ends, one at a time with the passes: a "
                "transfer starts once its pass and the pass before its reader are done, and its sender waits "
                "for it (default: transfers overlap the passes)");
  cmd->add_option("--recompute", a->recompute,
                  "Activation recomputation: none; selective (the attention's scores and softmax are "
                  "recomputed in the backward, not stored); full (keep only each layer's input, run the "
                  "forward again in the backward; not with zb-h1). Given alone: full")
      ->expected(0, 1)
      ->check(CLI::IsMember(with(model::kRecomputeNames.names(), {""})));
  cmd->add_flag(
      "--sequence-parallel", a->cfg.sequence_parallel,
      "Sequence parallelism with --tp (Megatron): norms and dropouts on 1/tp of the tokens, their "
      "activations / tp; every tensor-parallel all-reduce becomes an all-gather and a reduce-scatter");
  cmd->add_option("--zero", a->zero,
                  "ZeRO stage of the data-parallel ranks: 0 replicated state, gradients all-reduced; 1 the "
                  "distributed optimizer (optimizer state / dp; gradients reduce-scattered, weights "
                  "all-gathered after the step); 2 gradients / dp too; 3 weights / dp too (FSDP), gathered "
                  "before every pass")
      ->check(CLI::Range(0, 3))
      ->default_val(0);
  cmd->add_option(
         "--ep", a->cfg.ep,
         "Expert parallelism (MoE models): groups of this many data (and context) replicas share the "
         "experts, each holding experts/ep; tokens go to their experts and back by all-to-all (divides "
         "dp x cp)")
      ->check(CLI::PositiveNumber)
      ->default_val(1);
  cmd->add_option(
         "--expert-skew", a->cfg.expert_skew,
         "Routing: the busiest expert-parallel rank's tokens over the mean, 1 (uniform, the default) "
         "to ep")
      ->check(number_in(1.0, 1e6))
      ->default_val(1);
  cmd->add_flag("--flash-attention", a->cfg.flash_attention,
                "Fused attention (FlashAttention): the attention scores are never stored");
  cmd->add_flag("--overlap-grad-reduce", a->cfg.overlap_grad_reduce,
                "Reduce gradients in buckets during each chunk's last backward (Megatron-Core's "
                "overlap_grad_reduce), each bucket as soon as the backward has run its layers");
  cmd->add_flag("--overlap-param-gather", a->cfg.overlap_param_gather,
                "ZeRO-1/2: gather each bucket's updated weights during the forward, just ahead of its layers "
                "(Megatron-Core's overlap_param_gather), not after the optimizer step");
  cmd->add_option("--bucket-size", a->cfg.bucket_params,
                  "Parameters per gradient bucket, of one rank's share (default max(4e7, 1e6 x dp x cp), "
                  "Megatron-Core's)")
      ->check(number_in(1.0, 1e15));
  cmd->add_flag("--tp-comm-overlap", a->cfg.tp_comm_overlap,
                "Run each pass's tensor-parallel collectives beside its compute (Transformer Engine's "
                "userbuffers overlap) instead of after it");
  cmd->add_flag("--fp8", a->cfg.fp8,
                "FP8 weight GEMMs in the transformer layers (Transformer Engine's recipe), at the GPU's FP8 "
                "peak (" +
                    hardware::fp8_gpu_names() + ")");
  add_host_per_kernel_option(*cmd, a->host_per_kernel,
                             "default 0: the host keeps ahead of the GPU, as under CUDA graphs");
  cmd->add_option(
         "--memory-reserve", a->memory_reserve,
         "Memory each GPU keeps beyond the model's tensors: the CUDA context, NCCL's buffers and the "
         "allocator's fragmentation (docs/training.md)")
      ->capture_default_str();
  cmd->add_option("--reshard", a->reshard, "How activations and gradients cross stages")
      ->check(CLI::IsMember(with(reshard::kStrategyNames.names(), {"auto"})))
      ->capture_default_str();
  cmd->add_option("--balance", a->balance, "Sender balancing of the stage transfers")
      ->check(CLI::IsMember(reshard::kBalanceNames.names()))
      ->capture_default_str();
  cmd->add_option(
         "--layer-split", a->layer_split,
         "Under tensor parallelism, how layers that list their kernels are split: by channels "
         "(all-reduces per pass), by batch (whole layer per rank, one gradient all-reduce), or auto: "
         "per layer, the fewest bytes moved that fit in memory")
      ->check(CLI::IsMember(with({"auto"}, model::kLayerSplitNames.names())))
      ->capture_default_str();
  cmd->add_option("--first-gpu", a->cfg.first_gpu, "Index of the first GPU used")
      ->check(CLI::NonNegativeNumber)
      ->default_val(0);
  cmd->add_option(
         "--gpus-per-host", a->cfg.gpus_per_host,
         "Use only this many GPUs of each host, from --first-gpu's place in its host on (as Alpa's "
         "virtual mesh of hosts x devices per host): e.g. 1 puts each stage of --pp 2 on its own host")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--trace", a->trace, "Write the iteration's Chrome/Perfetto trace")->check(output_file());
  a->trace_detail.add_to(*cmd);
  cmd->add_option("--plan-out", a->plan_out, "Write the iteration's plan (meshsim.plan/1)")
      ->check(output_file());
  cmd->add_option("--plot", a->plot, "Draw the iteration as a Gantt chart (PNG): passes per pipeline device")
      ->check(output_file());
  cmd->add_flag("--chunked-broadcasts", a->chunked_broadcasts,
                "Simulate broadcasts chunk by chunk (512 KiB pieces) instead of as one fluid chain each: "
                "exact on unequal chains, and much slower on large runs");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a, cmd] {
    warn_needless(*cmd, {{"--trace-detail", "--trace"}, {"--layer-split", "--tp"}});
    run_pipeline(*a);
  });
}

}  // namespace meshsim::cli
