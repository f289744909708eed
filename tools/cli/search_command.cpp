// `meshsim search`: a grid of training configurations (dp x tp x pp,
// microbatching, schedule, stage transfer), each simulated in full, ranked.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <malloc.h>
#include <memory>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "hardware/gpus.h"
#include "runtime/distributed.h"
#include "search/results.h"
#include "search/space_file.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/cost_output.h"
#include "tools/cli/model_option.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/progress.h"
#include "tools/cli/search_store.h"
#include "tools/cli/topology_source.h"
#include "topology/cluster.h"
#include "topology/placement.h"

namespace meshsim::cli {

namespace {

namespace ps = search;

struct SearchArgs {
  std::string space_file;
  std::string model;
  TopologySource topology;
  CalibrationOption calibration;
  std::optional<double> compute_efficiency;
  ps::Space space;
  std::vector<std::string> schedules{"1f1b"};
  std::vector<std::string> reshards{"broadcast"};
  std::vector<std::string> recompute{"off"};
  std::string sequence_parallel = "off";
  std::string flash_attention = "off";
  std::vector<int> zero{0};
  std::optional<std::string> memory_reserve;
  std::optional<std::string> host_per_kernel;
  bool fp8 = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool tp_comm_overlap = false;
  int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  int top = 10;
  std::string out;
  std::string resume;
  bool no_plots = false;
  bool json = false;
  bool uncertainty = false;
};

std::string config_name(const pipeline::PipelineConfig& c) {
  return fmt::format("dp{} tp{} pp{} x{}x{} {}{}{} {}", c.dp, c.tp, c.pp, c.microbatches, c.microbatch_size,
                     model::to_string(c.schedule),
                     c.virtual_stages > 1 ? fmt::format(" v{}", c.virtual_stages) : "",
                     c.full_recompute()                           ? " rc"
                     : c.recompute == model::Recompute::selective ? " sel"
                                                                  : "",
                     reshard::to_string(c.reshard)) +
         (c.sequence_parallel ? " sp" : "") +
         (c.zero != model::ZeroStage::none ? fmt::format(" z{}", static_cast<int>(c.zero)) : "") +
         (c.flash_attention ? " fa" : "") + (c.ep > 1 ? fmt::format(" ep{}", c.ep) : "") +
         (c.cp > 1 ? fmt::format(" cp{}", c.cp) : "");
}

// --sequence-parallel and --flash-attention: off, on or both.
std::vector<bool> off_on(const std::string& v) {
  return v == "both" ? std::vector<bool>{false, true} : std::vector<bool>{v == "on"};
}

// --recompute: off, on or both (none and full), or a list of none, selective and full.
std::vector<model::Recompute> recompute_list(const std::vector<std::string>& v) {
  if (v.size() == 1 && v[0] == "off") return {model::Recompute::none};
  if (v.size() == 1 && v[0] == "on") return {model::Recompute::full};
  if (v.size() == 1 && v[0] == "both") return {model::Recompute::none, model::Recompute::full};
  std::vector<model::Recompute> out;
  for (const std::string& name : v) {
    const auto r = model::kRecomputeNames.parse(name);
    if (!r)
      throw UsageError(
          fmt::format("--recompute: \"{}\" is not off, on, both, none, selective or full", name));
    out.push_back(*r);
  }
  return out;
}

// The model, cluster and space: from a space file, else from the options.
struct SearchJob {
  std::string name;
  model::Model model;
  topology::Topology topo;
  sim::SimOptions so;
  std::string compute;
  ps::Space space;
  std::string placed;      // where a placed job landed (topology::place_job); empty: contiguous
  topology::JobCost cost;  // the job's price and power (topology/cost.h)
  // --uncertainty: the compute models at the slow and fast ends of the profiles' spreads.
  std::vector<sim::DeviceModel> slow_models;
  std::vector<sim::DeviceModel> fast_models;
};

// A configuration's cost per step and per million tokens.
topology::StepCost step_cost_of(const SearchJob& j, const ps::Result& r) {
  return topology::step_cost(
      j.cost, Time::from_seconds(r.metrics.iteration_s),
      static_cast<double>(j.space.global_batch) * static_cast<double>(j.model.sequence));
}

Json top_json(const SearchJob& j, const std::vector<ps::Result>& results,
              const std::vector<std::size_t>& order, int top, const std::vector<search::Band>& bands,
              double peak) {
  Json out = Json::array();
  for (std::size_t k = 0; k < order.size() && static_cast<int>(k) < top; ++k) {
    const ps::Result& r = results[order[k]];
    const auto& c = r.config;
    out.push_back(Json{{"dp", c.dp},
                       {"tp", c.tp},
                       {"pp", c.pp},
                       {"microbatches", c.microbatches},
                       {"microbatch_size", c.microbatch_size},
                       {"schedule", model::to_string(c.schedule)},
                       {"virtual_stages", c.virtual_stages},
                       {"recompute", model::kRecomputeNames.name(c.recompute)},
                       {"sequence_parallel", c.sequence_parallel},
                       {"zero", static_cast<int>(c.zero)},
                       {"flash_attention", c.flash_attention},
                       {"ep", c.ep},
                       {"cp", c.cp},
                       {"reshard", reshard::to_string(c.reshard)},
                       {"iteration_s", r.metrics.iteration_s},
                       {"samples_per_s", r.metrics.samples_per_s},
                       {"tflops_per_gpu", r.metrics.tflops_per_gpu},
                       {"mfu", peak > 0 ? Json(r.metrics.tflops_per_gpu * 1e12 / peak) : Json(nullptr)},
                       {"bubble", r.metrics.bubble},
                       {"exposed_comm_s", r.metrics.exposed_comm_s},
                       {"peak_memory_bytes", r.peak_memory_bytes},
                       {"cost", cost_json(j.cost, step_cost_of(j, r))}});
    if (k < bands.size())
      out.back()["band"] = Json{{"slow_s", bands[k].slow_s},
                                {"fast_s", bands[k].fast_s},
                                {"ties_the_first", k > 0 && search::ties(bands[0], bands[k])}};
  }
  return out;
}

SearchJob make_job(SearchArgs& a) {
  SearchJob j;
  std::optional<double> efficiency = a.compute_efficiency;
  if (!a.space_file.empty()) {
    if (!a.model.empty() || !a.topology.what.empty() || a.space.global_batch > 0)
      throw UsageError("give either a space file or --model, --topology and --global-batch, not both");
    const ps::SpaceFile f = ps::load_space_file(a.space_file);
    j.name = f.name;
    j.model = load_model_arg(f.model);
    TopologySource file_topology;
    file_topology.what = f.topology;
    j.topo = f.machine ? topology::build_cluster(*f.machine) : file_topology.load();
    if (!f.placement.empty()) j.topo.placement = f.placement;
    if (a.topology.placement) j.topo.placement = *a.topology.placement;  // the command line over the file
    a.topology.apply_costs(j.topo);
    j.space = f.space;
    if (!efficiency) efficiency = f.compute_efficiency;
  } else {
    if (a.model.empty() || a.topology.what.empty() || a.space.global_batch < 1)
      throw UsageError("give a space file (meshsim.search/1), or --model, --topology and --global-batch");
    j.model = load_model_arg(a.model);
    j.topo = a.topology.load();
    j.space = a.space;
    j.space.schedules.clear();
    for (const auto& s : a.schedules) j.space.schedules.push_back(*model::schedule_from(s));
    j.space.reshards.clear();
    for (const auto& r : a.reshards) j.space.reshards.push_back(*reshard::strategy_from(r));
    j.space.recompute = recompute_list(a.recompute);
    j.space.sequence_parallel = off_on(a.sequence_parallel);
    j.space.flash_attention = off_on(a.flash_attention);
    j.space.zero.clear();
    for (int z : a.zero) j.space.zero.push_back(static_cast<model::ZeroStage>(z));
    if (auto r = ps::repeated_value(j.space)) {
      std::string option = "--" + r->list;
      std::replace(option.begin(), option.end(), '_', '-');
      throw UsageError(fmt::format("{}: {} is given twice (each would be searched twice)", option, r->value));
    }
  }
  if (a.memory_reserve)
    j.space.memory_reserve = option_value("--memory-reserve", *a.memory_reserve, parse_bytes);
  j.space.fp8 = j.space.fp8 || a.fp8;
  j.space.overlap_grad_reduce = j.space.overlap_grad_reduce || a.overlap_grad_reduce;
  j.space.overlap_param_gather = j.space.overlap_param_gather || a.overlap_param_gather;
  j.space.tp_comm_overlap = j.space.tp_comm_overlap || a.tp_comm_overlap;
  // The job's GPUs, at most the cluster's (enumerate refuses more, naming both).
  const auto all_gpus = static_cast<std::int64_t>(j.topo.gpus().size());
  const std::int64_t job_gpus = j.space.gpus > 0 ? std::min<std::int64_t>(j.space.gpus, all_gpus) : all_gpus;
  j.placed = topology::place_job(j.topo, topology::hosts_for_gpus(j.topo, job_gpus));
  j.cost = topology::job_cost(j.topo, static_cast<int>(job_gpus));
  a.calibration.apply(j.topo, j.so);
  j.compute = sim::apply_compute_efficiency(j.topo, j.so.device_models, efficiency, j.model.dtype);
  if (j.space.fp8) j.compute += "; FP8 GEMMs: " + sim::fp8_compute_line(j.topo, j.so.device_models);
  j.space.host_per_kernel =
      host_per_kernel_value(a.host_per_kernel, j.space.host_per_kernel, j.topo, j.so.device_models);
  if (a.uncertainty)
    for (const auto end : {sim::SpreadEnd::low, sim::SpreadEnd::high}) {
      sim::SimOptions so;
      a.calibration.apply(j.topo, so, end);  // its links again: the same figures
      (void)sim::apply_compute_efficiency(j.topo, so.device_models, efficiency, j.model.dtype);
      (end == sim::SpreadEnd::low ? j.slow_models : j.fast_models) = so.device_models;
    }
  a.calibration.apply(j.topo);  // the links back at their values
  return j;
}

// --uncertainty: the band of each of the first `top` of `order`, compute
// and links at the slow, then the fast end of their spreads.
std::vector<ps::Band> top_bands(SearchArgs& a, SearchJob& j, const std::vector<ps::Result>& results,
                                const std::vector<std::size_t>& order) {
  if (!a.uncertainty) return {};
  std::vector<pipeline::PipelineConfig> configs;
  for (std::size_t k = 0; k < order.size() && static_cast<int>(k) < a.top; ++k)
    configs.push_back(results[order[k]].config);
  ps::Options o;
  o.threads = a.threads;
  // The configurations with an eager framework's host work at `models`' figure.
  const auto at = [&](const std::vector<sim::DeviceModel>& models) {
    if (a.host_per_kernel != "eager") return configs;
    auto out = configs;
    const Time host = host_per_kernel_value(a.host_per_kernel, Time::zero(), j.topo, models);
    for (auto& c : out) c.host_per_kernel = host;
    return out;
  };
  o.device_models = j.slow_models;
  a.calibration.apply(j.topo, sim::SpreadEnd::low);
  const auto slow = ps::run(at(j.slow_models), j.model, j.topo, o);
  o.device_models = j.fast_models;
  a.calibration.apply(j.topo, sim::SpreadEnd::high);
  const auto fast = ps::run(at(j.fast_models), j.model, j.topo, o);
  a.calibration.apply(j.topo);  // back at the values
  return ps::bands(slow, fast);
}

void print_search(SearchArgs& a, SearchJob& j, const std::vector<ps::Result>& results,
                  const std::size_t (&counts)[3], double memory, double seconds, std::size_t reused,
                  const std::string& dir, const std::string& plots) {
  const auto order = ps::ranking(results);
  const std::vector<ps::Band> bands = top_bands(a, j, results, order);
  // MFU: model FLOPs per GPU against the GPU's dense datasheet peak for the model's dtype.
  const sim::DeviceModel* gpu = sim::find_device_model(j.topo.node(j.topo.gpus()[0]).model);
  const double peak = gpu != nullptr ? gpu->peak(j.model.dtype) : 0;
  if (a.json) {
    fmt::print("{}", dump_json(Json{{"configs", results.size()},
                                    {"simulated", counts[0]},
                                    {"filtered", counts[1]},
                                    {"invalid", counts[2]},
                                    {"reused", reused},
                                    {"seconds", seconds},
                                    {"threads", a.threads},
                                    {"placement", topology::placement_of(j.topo)},
                                    {"top", top_json(j, results, order, a.top, bands, peak)}}));
    return;
  }
  fmt::print("search {}{} on {} ({} GPUs), global batch {}; compute {}\n", j.model.name,
             j.name.empty() ? "" : fmt::format(" ({})", j.name), j.topo.name, j.topo.gpus().size(),
             j.space.global_batch, j.compute);
  if (!j.placed.empty()) fmt::print("placement {}\n", j.placed);
  fmt::print(
      "{} configurations: {} simulated, {} out of memory ({} per GPU), {} invalid{}; {:.1f} s on {} "
      "threads\n\n",
      results.size(), counts[0], counts[1],
      memory > 0 ? human_string(Bytes(static_cast<std::int64_t>(memory))) : "no limit", counts[2],
      reused > 0 ? fmt::format(" ({} from {})", reused, dir) : "", seconds, a.threads);
  std::vector<std::string> head{"rank", "configuration", "iteration",    "samples/s",   "TFLOP/s/GPU",
                                "MFU",  "bubble ratio",  "exposed comm", "peak memory", "cost/step"};
  if (!bands.empty()) head.insert(head.begin() + 3, "band (fast to slow)");
  Table tab(head);
  std::size_t tied = 0;
  for (std::size_t k = 0; k < order.size() && static_cast<int>(k) < a.top; ++k) {
    const ps::Result& r = results[order[k]];
    std::string rank = fmt::format("{}", k + 1);
    std::string band;
    if (k < bands.size()) {
      band = fmt::format("{:.3f} to {:.3f} s", bands[k].fast_s, bands[k].slow_s);
      if (k > 0 && ps::ties(bands[0], bands[k])) {
        rank = "=1";
        ++tied;
      }
    }
    std::vector<std::string> row{
        rank,
        config_name(r.config),
        fmt::format("{:.3f} s", r.metrics.iteration_s),
        fmt::format("{:.2f}", r.metrics.samples_per_s),
        fmt::format("{:.1f}", r.metrics.tflops_per_gpu),
        peak > 0 ? fmt::format("{:.1f} %", 100 * r.metrics.tflops_per_gpu * 1e12 / peak) : "-",
        fmt::format("{:.3f}", r.metrics.bubble),
        fmt::format("{:.3f} s", r.metrics.exposed_comm_s),
        human_string(Bytes(static_cast<std::int64_t>(r.peak_memory_bytes))),
        step_cost_of(j, r).usd_per_step ? dollars(*step_cost_of(j, r).usd_per_step) : "-"};
    if (!bands.empty()) row.insert(row.begin() + 3, band);
    tab.add(row);
  }
  std::vector<bool> right{true, false, true, true, true, true, true, true, true, true};
  if (!bands.empty()) right.insert(right.begin() + 3, true);
  fmt::print("{}", tab.render(right));
  if (!bands.empty())
    fmt::print(
        "(band: the iteration with every profile figure at the fast and the slow end of its spread; "
        "=1: its band overlaps the first's, so the prediction cannot rank them: {} of the {} listed)\n",
        tied, std::min<std::size_t>(order.size(), static_cast<std::size_t>(a.top)) - 1);
  fmt::print(
      "(x MxB: M microbatches of B samples; rc: full, sel: selective recomputation; sp: sequence "
      "parallelism; zN: ZeRO-N; fa: fused attention; epN: expert parallelism; cpN: context parallelism)\n");
  if (!dir.empty())
    fmt::print("\nresults: {}{}\n", (std::filesystem::path(dir) / "results.csv").string(), plots);
}

std::string draw_plots(const std::string& dir) {
  const bool ok =
      run_plot_script("plot_search.py", (std::filesystem::path(dir) / "results.csv").string(), dir) == 0;
  return ok ? ", pareto.png, heatmap.png"
            : " (plots skipped: python3-matplotlib missing, or nothing simulated)";
}

void run_search(SearchArgs& a) {
  // Every configuration builds and frees plans of up to ~100 MB: keep freed
  // memory in the process for the next one instead of returning it to the
  // kernel and faulting it in again, page by page.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (!a.resume.empty() && !a.out.empty() && a.resume != a.out)
    throw UsageError("--resume DIR writes its results to DIR: leave out --out, or give the same directory");
  std::string dir = a.resume.empty() ? a.out : a.resume;
  if (!a.resume.empty() && path_kind(a.resume) != PathKind::directory)
    throw UsageError(fmt::format("--resume {}: no such directory", a.resume));
  dir = prepare_output_dir(dir, a.resume.empty() ? "--out" : "--resume");
  SearchJob j = make_job(a);
  const auto configs = ps::enumerate(j.space, j.model, j.topo);
  const std::string fp = ps::fingerprint(j.model, j.topo, j.so.device_models, MESHSIM_VERSION);
  std::vector<std::string> keys;
  for (const auto& c : configs) keys.push_back(ps::config_key(fp, c));
  runtime::Distributed* dist = runtime::distributed();
  const int rank = dist != nullptr ? dist->rank() : 0;
  const int ranks = dist != nullptr ? dist->size() : 1;
  // Reuse what an earlier run of the same search left; this rank runs
  // every ranks-th of the rest.
  std::vector<ps::Result> results(configs.size());
  std::vector<std::size_t> todo;
  std::size_t reused = 0;
  const auto known = a.resume.empty() ? std::map<std::string, ps::Result>{} : load_search_rows(a.resume);
  for (std::size_t i = 0, left = 0; i < configs.size(); ++i) {
    if (auto it = known.find(keys[i]); it != known.end()) {
      results[i] = it->second;
      ++reused;
    } else if (left++ % static_cast<std::size_t>(ranks) == static_cast<std::size_t>(rank)) {
      todo.push_back(i);
    }
  }
  std::vector<pipeline::PipelineConfig> mine;
  for (std::size_t i : todo) mine.push_back(configs[i]);
  ps::Options o;
  o.threads = a.threads;
  o.device_models = j.so.device_models;
  if (const sim::DeviceModel* dm =
          sim::find_device_model(j.topo.node(j.topo.gpus()[0]).model, j.so.device_models))
    o.memory_capacity = static_cast<double>(dm->memory_capacity.count());
  std::optional<PartialResults> partial;
  if (!dir.empty()) partial.emplace(dir, rank, ranks);
  o.on_result = [&](std::size_t k, const ps::Result& r) {
    if (partial) partial->append(ps::csv_row(r, keys[todo[k]]));
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto ran =
      ps::run(mine, j.model, j.topo, o, progress_reporter("search", "configurations", a.json || rank != 0));
  for (std::size_t k = 0; k < todo.size(); ++k) results[todo[k]] = ran[k];
  gather_search_rows(results, todo, keys);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rank != 0) return;
  std::size_t counts[3] = {0, 0, 0};
  for (const auto& r : results) ++counts[static_cast<int>(r.status)];
  std::string plots;
  if (!dir.empty()) {
    write_file((std::filesystem::path(dir) / "results.csv").string(),
               [&](std::ostream& out) { ps::write_results_csv(out, results, keys); });
    partial.reset();
    remove_partial_results(dir);
    if (!a.no_plots) plots = draw_plots(dir);
  }
  print_search(a, j, results, counts, o.memory_capacity, seconds, reused, dir, plots);
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = app.add_subcommand(
      "search",
      "Search data/tensor/pipeline splits, microbatching, schedules and recomputation: every configuration "
      "simulated");
  cmd->footer(
      "Every split dp x tp x pp that fills the GPUs (tp inside a host unless --tp-across-hosts), every\n"
      "microbatch size dividing the per-replica batch, every schedule, recomputation setting and stage\n"
      "transfer given, built as `meshsim pipeline` builds it and simulated in full. Configurations whose\n"
      "memory estimate (weights, gradients, optimizer state, activations in flight) exceeds the GPU's\n"
      "memory are counted and not simulated. Results do not depend on --threads, nor on the number of\n"
      "processes under `mpirun -np N meshsim-mpi search ...` (rank 0 writes everything).\n"
      "With --out or --resume, each finished configuration is saved at once; --resume DIR reruns only\n"
      "what DIR lacks for this model, cluster, space and meshsim version. --out also draws pareto.png\n"
      "(throughput against peak memory) and heatmap.png (dp x pp for the best tp).\n"
      "Examples: meshsim search configs/studies/search-gpt3-39b.json --out search/\n"
      "          meshsim search --model gpt3-13b -t dgx-a100-80gb --hosts 8 --global-batch 512 \\\n"
      "             --schedules 1f1b,interleaved-1f1b --recompute both --out search/");
  cmd->add_option("space", a->space_file,
                  "Search space file (meshsim.search/1); else give --model, -t, --global-batch")
      ->check(CLI::ExistingFile);
  cmd->add_option(
      "--model", a->model,
      "Model: a meshsim.model/1 file, or a name from configs/models/ (gpt3-13b, gpt3-39b, gpt3-175b, ...)");
  a->topology.add_to(*cmd, "--topology", false);
  a->topology.add_placement_to(*cmd);
  a->topology.add_cost_to(*cmd);
  a->calibration.add_with_profile_to(*cmd);
  add_compute_efficiency_option(*cmd, a->compute_efficiency);
  cmd->add_flag("--uncertainty", a->uncertainty,
                "Also simulate the listed configurations (--top) with every profile figure at the slow and "
                "the fast end of its spread: each gets a band, and those whose band overlaps the first's are "
                "ranked =1, ties the prediction cannot separate");
  cmd->add_option("--global-batch", a->space.global_batch, "Samples per iteration")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--gpus", a->space.gpus, "GPUs to use (default: all of the topology)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--microbatch-sizes", a->space.microbatch_sizes, "Microbatch sizes to try")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--schedules", a->schedules, "Schedules to try")
      ->delimiter(',')
      ->check(CLI::IsMember(model::kScheduleNames.names()))
      ->capture_default_str();
  cmd->add_option("--virtual-stages", a->space.virtual_stages, "Model chunks per device for interleaved-1f1b")
      ->delimiter(',')
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  cmd->add_option("--recompute", a->recompute,
                  "Activation recomputation to try: off, on (full), both (none and full), or a list of none, "
                  "selective and full")
      ->delimiter(',')
      ->check(CLI::IsMember({"off", "on", "both", "none", "selective", "full"}))
      ->capture_default_str();
  cmd->add_option("--sequence-parallel", a->sequence_parallel,
                  "Sequence parallelism (with tp > 1): off, on or both")
      ->check(CLI::IsMember({"off", "on", "both"}))
      ->capture_default_str();
  cmd->add_option("--zero", a->zero, "ZeRO stages to try (with dp > 1), e.g. 0,1,3")
      ->delimiter(',')
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd->add_option("--flash-attention", a->flash_attention, "Fused attention: off, on or both")
      ->check(CLI::IsMember({"off", "on", "both"}))
      ->capture_default_str();
  cmd->add_option(
         "--ep", a->space.ep,
         "Expert-parallel degrees to try (MoE models; those dividing dp x cp and the experts), e.g. 1,8")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option(
         "--cp", a->space.cp,
         "Context-parallel degrees to try (with fused attention; the sequence must split into 2 x cp "
         "chunks), e.g. 1,2,4")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--tp", a->space.tp, "Only these tensor-parallel degrees (default: every one that fits)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd->add_option("--pp", a->space.pp, "Only these pipeline degrees (default: every one that fits)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd->add_option("--dp", a->space.dp, "Only these data-parallel degrees (default: every one that fits)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd->add_option("--reshards", a->reshards, "Stage transfer strategies to try")
      ->delimiter(',')
      ->check(CLI::IsMember(reshard::kStrategyNames.names()))
      ->capture_default_str();
  cmd->add_flag("--tp-across-hosts", a->space.tp_across_hosts, "Also try tensor parallelism across hosts");
  cmd->add_option(
      "--memory-reserve", a->memory_reserve,
      "Memory each GPU keeps beyond the model's tensors: the CUDA context, NCCL's buffers and the "
      "allocator's fragmentation (default " +
          exact_string(model::kDefaultReserve) + "; docs/training.md)");
  add_host_per_kernel_option(*cmd, a->host_per_kernel,
                             "default: the space file's, else 0: the host keeps ahead, as under CUDA graphs");
  cmd->add_flag("--overlap-grad-reduce", a->overlap_grad_reduce,
                "Every configuration reduces gradients in buckets during the backward (see pipeline --help)");
  cmd->add_flag("--overlap-param-gather", a->overlap_param_gather,
                "Every ZeRO-1/2 configuration gathers its weights during the forward");
  cmd->add_flag("--tp-comm-overlap", a->tp_comm_overlap,
                "Every configuration with tp > 1 runs its tensor-parallel collectives beside the compute");
  cmd->add_flag("--fp8", a->fp8,
                "FP8 weight GEMMs in every configuration (Transformer Engine's recipe; " +
                    hardware::fp8_gpu_names() + ")");
  cmd->add_option("--threads", a->threads, "Worker threads (default: every core)")->check(CLI::Range(1, 256));
  cmd->add_option("--top", a->top, "Rows of the ranking to print")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--out", a->out,
                  "Directory for results.csv (every configuration and its status) and the plots");
  cmd->add_option(
      "--resume", a->resume,
      "Directory of an earlier (maybe interrupted) run of this search: reuse its results, write there");
  cmd->add_flag("--no-plots", a->no_plots, "Do not draw pareto.png and heatmap.png");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a, cmd] {
    warn_needless(*cmd, {{"--no-plots", "--out"}});
    run_search(*a);
  });
}

}  // namespace meshsim::cli
