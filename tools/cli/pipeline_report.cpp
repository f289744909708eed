#include "tools/cli/pipeline_report.h"

#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/table.h"
#include "core/unit_strings.h"
#include "pipeline/layer_split.h"
#include "tools/cli/cost_output.h"
#include "topology/placement.h"

namespace meshsim::cli {

std::string gib(double bytes) {
  return fmt::format("{:.2f}", bytes / static_cast<double>(Bytes::GiB(1).count()));
}

namespace {

Json stages_json(const PipelineRun& run) {
  Json stages = Json::array();
  for (std::size_t s = 0; s < run.it.stages.size(); ++s) {
    const auto& vs = run.it.stages[s];
    stages.push_back(Json{{"stage", s},
                          {"device", static_cast<int>(s) % run.cfg.pp},
                          {"layers", Json::array({vs.first_layer, vs.end_layer})},
                          {"forward_flops_per_sample", vs.forward_flops},
                          {"param_bytes", vs.param_bytes}});
    if (!vs.splits.empty()) {
      Json splits = Json::array();
      for (model::LayerSplit x : vs.splits) splits.push_back(std::string(to_string(x)));
      stages.back()["layer_splits"] = std::move(splits);
    }
  }
  return stages;
}

// Per pipeline device: its GPUs and what it holds.
Json memory_json(const PipelineRun& run) {
  Json memory = Json::array();
  std::size_t device = 0;
  for (const pipeline::DeviceMemory& m : run.it.memory) {
    Json o{{"device", device}, {"gpus", run.it.stage_gpus[device++]}};
    o["weights_bytes"] = m.weights_bytes;
    o["gradient_bytes"] = m.gradient_bytes;
    o["optimizer_bytes"] = m.optimizer_bytes;
    o["training_state_bytes"] = m.training_state_bytes;
    o["activation_bytes"] = m.activation_bytes;
    o["peak_in_flight"] = m.peak_in_flight;
    o["total_bytes"] = m.total();
    o["reserve_bytes"] = run.cfg.memory_reserve.count();
    o["fits"] = run.fits(m);
    memory.push_back(std::move(o));
  }
  return memory;
}

// Per pipeline device: its GPUs, layers, FLOPs and memory.
Table device_table(const PipelineRun& run) {
  const auto& [it, cfg] = std::tie(run.it, run.cfg);
  Table st({"device", "GPUs", "layers", "GFLOP/sample", "weights GiB", "grads GiB", "optimizer GiB",
            "activations GiB", "in flight", "total GiB", "fits"});
  for (int p = 0; p < cfg.pp; ++p) {
    std::string layers;
    double flops = 0;
    for (int c = 0; c < cfg.virtual_stages; ++c) {
      const auto& vs = it.stages[static_cast<std::size_t>(c * cfg.pp + p)];
      if (!layers.empty()) layers += " ";
      layers += fmt::format("{}-{}", vs.first_layer, vs.end_layer - 1);
      flops += vs.forward_flops;
    }
    const auto& m = it.memory[static_cast<std::size_t>(p)];
    const auto& g = it.stage_gpus[static_cast<std::size_t>(p)];
    st.add({std::to_string(p), g.size() == 1 ? g.front() : fmt::format("{}..{}", g.front(), g.back()), layers,
            fmt::format("{:.1f}", flops / 1e9), gib(m.weights_bytes), gib(m.gradient_bytes),
            gib(m.optimizer_bytes), gib(m.activation_bytes), std::to_string(m.peak_in_flight), gib(m.total()),
            run.capacity <= 0 ? std::string("?")
            : run.fits(m)     ? std::string("yes")
                              : std::string("NO")});
  }
  return st;
}

Table results_table(const PipelineRun& run) {
  const pipeline::PipelineMetrics& pm = run.pm;
  const double it_s = pm.iteration_s;
  auto pct = [&](double v) { return fmt::format("{:.1f} %", it_s > 0 ? 100 * v / it_s : 0.0); };
  auto time = [](double s) { return human_string(Time::from_seconds(s)); };
  Table res({"metric", "value"});
  res.add({"iteration time", human_string(run.r.makespan)});
  if (run.band)
    res.add({"  band (profiles' spreads)",
             fmt::format("{} to {}", time(run.band->second.iteration_s), time(run.band->first.iteration_s))});
  res.add({"samples/s", fmt::format("{:.2f}", pm.samples_per_s)});
  res.add({"TFLOP/s per GPU", fmt::format("{:.1f} (MFU {:.1f} %)", pm.tflops_per_gpu, 100 * pm.mfu)});
  if (run.band)
    res.add({"  band (profiles' spreads)",
             fmt::format("{:.1f} to {:.1f} (MFU {:.1f} to {:.1f} %)", run.band->first.tflops_per_gpu,
                         run.band->second.tflops_per_gpu, 100 * run.band->first.mfu,
                         100 * run.band->second.mfu)});
  res.add({"idle (share of the iteration)", fmt::format("{:.1f} % per GPU, mean", 100 * pm.idle_fraction)});
  res.add({"bubble ratio (idle / passes)",
           fmt::format("{:.3f} (schedule alone {:.3f})", pm.bubble, pm.ideal_bubble)});
  res.add(
      {"exposed communication", fmt::format("{} ({})", time(pm.exposed_comm_s()), pct(pm.exposed_comm_s()))});
  const auto& cfg = run.cfg;
  res.add(
      {cfg.sequence_parallel ? "  tensor-parallel all-gather/reduce-scatter" : "  tensor-parallel all-reduce",
       time(pm.critical_tp_s)});
  res.add({"  stage transfers", time(pm.critical_transfer_s)});
  if (cfg.ep > 1) res.add({"  expert all-to-all", time(pm.critical_ep_s)});
  if (cfg.cp > 1) res.add({"  context key/value exchange", time(pm.critical_cp_s)});
  res.add({cfg.zero != model::ZeroStage::none ? "  data-parallel reduce-scatter/all-gather"
                                              : "  data-parallel all-reduce",
           time(pm.critical_dp_s)});
  res.add({"critical-path compute",
           fmt::format("{} (+ optimizer {})", time(pm.critical_compute_s), time(pm.critical_optimizer_s))});
  for (const auto& [name, value] : cost_rows(pm.job, pm.cost)) res.add({name, value});
  return res;
}

}  // namespace

std::string describe_training(const pipeline::PipelineConfig& cfg) {
  std::vector<std::string> parts;
  if (cfg.full_recompute()) parts.emplace_back("activation recomputation");
  if (cfg.recompute == model::Recompute::selective) parts.emplace_back("selective recomputation");
  if (cfg.sequence_parallel) parts.emplace_back("sequence parallelism");
  if (cfg.zero != model::ZeroStage::none) parts.push_back(fmt::format("ZeRO-{}", static_cast<int>(cfg.zero)));
  if (cfg.flash_attention) parts.emplace_back("fused attention");
  if (cfg.cp > 1) parts.push_back(fmt::format("context parallelism {}", cfg.cp));
  if (cfg.fp8) parts.emplace_back("FP8 GEMMs");
  if (cfg.overlap_grad_reduce)
    parts.push_back(fmt::format("gradients reduced in buckets of {:.3g} parameters during the backward",
                                cfg.grad_bucket_params()));
  if (cfg.overlap_param_gather) parts.emplace_back("parameter gathers overlapped with the forward");
  if (cfg.tp_comm_overlap) parts.emplace_back("tensor-parallel communication overlapped");
  if (cfg.host_per_kernel > Time::zero())
    parts.push_back(fmt::format("{} of host work per kernel", human_string(cfg.host_per_kernel)));
  if (cfg.ep > 1)
    parts.push_back(cfg.expert_skew > 1 ? fmt::format("expert parallelism {} (busiest rank at {}x the mean)",
                                                      cfg.ep, cfg.expert_skew)
                                        : fmt::format("expert parallelism {}", cfg.ep));
  return parts.empty() ? std::string() : fmt::format(" with {}", fmt::join(parts, ", "));
}

Json pipeline_json(const PipelineRun& run) {
  const auto& [it, cfg, pm] = std::tie(run.it, run.cfg, run.pm);
  Json xfers = Json::array();
  for (const auto& x : it.transfers) {
    xfers.push_back(Json{{"from_stage", x.src_stage},
                         {"to_stage", x.dst_stage},
                         {"layer", x.layer},
                         {"bytes", x.bytes.count()},
                         {"strategy", x.strategy}});
    if (x.side_output >= 0) xfers.back()["side_output"] = x.side_output;
  }
  Json doc{{"model", run.model.name},
           {"topology", run.topo.name},
           {"dp", cfg.dp},
           {"tp", cfg.tp},
           {"pp", cfg.pp},
           {"cp", cfg.cp},
           {"gpus", cfg.gpus()},
           {"schedule", run.schedule},
           {"virtual_stages", cfg.virtual_stages},
           {"recompute", model::kRecomputeNames.name(cfg.recompute)},
           {"sequence_parallel", cfg.sequence_parallel},
           {"zero", static_cast<int>(cfg.zero)},
           {"flash_attention", cfg.flash_attention},
           {"ep", cfg.ep},
           {"expert_skew", cfg.expert_skew},
           {"fp8", cfg.fp8},
           {"overlap_grad_reduce", cfg.overlap_grad_reduce},
           {"overlap_param_gather", cfg.overlap_param_gather},
           {"bucket_params", cfg.grad_bucket_params()},
           {"tp_comm_overlap", cfg.tp_comm_overlap},
           {"host_per_kernel_s", cfg.host_per_kernel.seconds()},
           {"microbatches", cfg.microbatches},
           {"microbatch_size", cfg.microbatch_size},
           {"global_batch", it.global_batch},
           {"placement", topology::placement_of(run.topo)},
           {"placement_notes", it.placement_notes},
           {"reshard", run.reshard},
           {"balance", run.balance},
           {"overlap", cfg.overlap},
           {"compute_models", run.compute_models},
           {"iteration_s", pm.iteration_s},
           {"samples_per_s", pm.samples_per_s},
           {"tflops_per_gpu", pm.tflops_per_gpu},
           {"mfu", pm.mfu},
           {"tokens", it.tokens},
           {"cost", cost_json(pm.job, pm.cost)},
           {"bubble", pm.bubble},
           {"idle_fraction", pm.idle_fraction},
           {"ideal_bubble", pm.ideal_bubble},
           {"ideal_iteration_s", it.ideal_makespan_s},
           {"exposed_comm_s", pm.exposed_comm_s()},
           {"critical_path_s", Json{{"compute", pm.critical_compute_s},
                                    {"tp_allreduce", pm.critical_tp_s},
                                    {"stage_transfer", pm.critical_transfer_s},
                                    {"dp_allreduce", pm.critical_dp_s},
                                    {"optimizer", pm.critical_optimizer_s},
                                    {"expert_alltoall", pm.critical_ep_s},
                                    {"context_exchange", pm.critical_cp_s}}},
           {"stages", stages_json(run)},
           {"memory", memory_json(run)},
           {"transfers", std::move(xfers)},
           {"tasks", it.plan.tasks.size()},
           {"events", run.r.events},
           {"build_s", run.build_s},
           {"simulate_s", run.sim_s}};
  if (run.band) {
    auto end = [](const pipeline::PipelineMetrics& m) {
      return Json{{"iteration_s", m.iteration_s}, {"tflops_per_gpu", m.tflops_per_gpu}, {"mfu", m.mfu}};
    };
    doc["band"] = Json{{"slow", end(run.band->first)}, {"fast", end(run.band->second)}};
  }
  return doc;
}

void print_pipeline_text(const PipelineRun& run) {
  const auto& [it, cfg] = std::tie(run.it, run.cfg);
  fmt::print("pipeline {} on {}: {} = {} GPUs\n", run.model.name, run.topo.name, model::degrees(cfg),
             cfg.gpus());
  const std::string transfers =
      (cfg.reshard_auto ? std::string("auto") : fmt::format("{} ({})", run.reshard, run.balance)) +
      (cfg.overlap ? "" : ", each holding both ends on the compute stream (no overlap)");
  fmt::print("schedule {}{}{}, {} microbatches of {} (global batch {}), stage transfers {}\n", run.schedule,
             cfg.virtual_stages > 1 ? fmt::format(" (v = {})", cfg.virtual_stages) : std::string(),
             describe_training(cfg), cfg.microbatches, cfg.microbatch_size, it.global_batch, transfers);
  fmt::print("compute {}\n", run.compute_models);
  if (!run.placed.empty()) fmt::print("placement {}\n", run.placed);
  for (const std::string& note : it.placement_notes) fmt::print("note: {}\n", note);
  for (std::size_t s = 0; s < it.stages.size(); ++s)
    if (const std::string d = pipeline::describe_splits(it.stages[s]); !d.empty())
      fmt::print("stage {} layers over the tensor ranks: {}\n", s, d);
  fmt::print("\n");
  fmt::print("{}\n", device_table(run).render(
                         {false, false, false, true, true, true, true, true, true, true, false}));
  if (run.capacity > 0)
    fmt::print(
        "fits: total + {} GiB reserve (CUDA context, NCCL buffers, allocator; --memory-reserve) within "
        "the {} GiB of a {}\n\n",
        gib(static_cast<double>(run.cfg.memory_reserve.count())), gib(run.capacity), run.gpu);
  if (!it.transfers.empty()) {
    const auto& x = it.transfers.front();
    fmt::print("stage transfers: {} per microbatch each way, e.g. stage {} -> {}: {} ({})\n\n",
               it.transfers.size(), x.src_stage, x.dst_stage, human_string(x.bytes), x.strategy);
  }
  fmt::print("{}\n", results_table(run).render({false, false}));
  fmt::print("plan: {} tasks, built in {:.2f} s; simulated in {:.2f} s ({} events)\n", it.plan.tasks.size(),
             run.build_s, run.sim_s, run.r.events);
  for (std::size_t p = 0; p < it.memory.size(); ++p)
    if (!run.fits(it.memory[p]))
      fmt::print("warning: pipeline device {} needs {} GiB with the reserve, more than the {} GiB of a {}\n",
                 p, gib(it.memory[p].total() + static_cast<double>(run.cfg.memory_reserve.count())),
                 gib(run.capacity), run.gpu);
}
}  // namespace meshsim::cli
