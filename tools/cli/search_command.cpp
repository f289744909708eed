// `meshsim search`: a grid of training configurations (dp x tp x pp,
// microbatching, schedule, stage transfer), each simulated in full, ranked.

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/unit_strings.h"
#include "planner/search/search.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_option.h"
#include "tools/cli/output.h"
#include "tools/cli/table.h"
#include "tools/cli/topology_source.h"

namespace meshsim::cli {

namespace {

namespace ps = planner::search;

struct SearchArgs {
  std::string model;
  TopologySource topology;
  CalibrationOption calibration;
  std::optional<double> compute_efficiency;
  ps::Space space;
  std::vector<std::string> schedules{"1f1b"};
  std::vector<std::string> reshards{"broadcast"};
  int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  int top = 10;
  std::string out;
  bool json = false;
};

std::string config_name(const planner::ParallelConfig& c) {
  return fmt::format("dp{} tp{} pp{} x{}x{} {}{} {}", c.dp, c.tp, c.pp, c.microbatches, c.microbatch_size,
                     planner::to_string(c.schedule),
                     c.virtual_stages > 1 ? fmt::format(" v{}", c.virtual_stages) : "",
                     planner::to_string(c.reshard));
}

Json top_json(const std::vector<ps::Result>& results, const std::vector<std::size_t>& order, int top) {
  Json out = Json::array();
  for (std::size_t k = 0; k < order.size() && static_cast<int>(k) < top; ++k) {
    const ps::Result& r = results[order[k]];
    const auto& c = r.config;
    out.push_back(Json{{"dp", c.dp},
                       {"tp", c.tp},
                       {"pp", c.pp},
                       {"microbatches", c.microbatches},
                       {"microbatch_size", c.microbatch_size},
                       {"schedule", planner::to_string(c.schedule)},
                       {"virtual_stages", c.virtual_stages},
                       {"reshard", planner::to_string(c.reshard)},
                       {"iteration_s", r.metrics.iteration_s},
                       {"samples_per_s", r.metrics.samples_per_s},
                       {"tflops_per_gpu", r.metrics.tflops_per_gpu},
                       {"bubble", r.metrics.bubble},
                       {"exposed_comm_s", r.metrics.exposed_comm_s()},
                       {"peak_memory_bytes", r.peak_memory_bytes}});
  }
  return out;
}

void run_search(SearchArgs& a) {
  const planner::Model model = load_model_arg(a.model);
  topology::Topology topo = a.topology.load();
  sim::SimOptions so;
  a.calibration.apply(topo, so);
  const std::string compute = apply_compute_efficiency(topo, so, a.compute_efficiency, model.dtype);
  a.space.schedules.clear();
  for (const auto& s : a.schedules) a.space.schedules.push_back(*planner::schedule_from(s));
  a.space.reshards.clear();
  for (const auto& r : a.reshards) a.space.reshards.push_back(*planner::strategy_from(r));
  const auto configs = ps::enumerate(a.space, model, topo);
  ps::Options o;
  o.threads = a.threads;
  o.device_models = so.device_models;
  if (const sim::DeviceModel* dm = sim::find_device_model(topo.node(topo.gpus()[0]).model, so.device_models))
    o.memory_capacity = static_cast<double>(dm->memory_capacity.count());
  const bool tty = !a.json && isatty(STDERR_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t last_line = 0;
  const auto results = ps::run(configs, model, topo, o, [&](std::size_t done, std::size_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = s > 0 ? static_cast<double>(done) / s : 0;
    if (tty)
      fmt::print(stderr, "\rsearch: {}/{} configurations, {:.0f}/s, {:.0f} s left   ", done, total, rate,
                 rate > 0 ? static_cast<double>(total - done) / rate : 0);
    else if (!a.json && done * 10 / total > last_line * 10 / total && done < total)
      fmt::print(stderr, "search: {}/{} configurations\n", done, total);
    last_line = done;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (tty) fmt::print(stderr, "\n");
  std::size_t counts[3] = {0, 0, 0};
  for (const auto& r : results) ++counts[static_cast<int>(r.status)];
  const auto order = ps::ranking(results);
  if (!a.out.empty()) {
    std::filesystem::create_directories(a.out);
    write_text_file(a.out + "/results.csv", ps::results_csv(results));
  }
  if (a.json) {
    fmt::print("{}", dump_json(Json{{"configs", results.size()},
                                    {"simulated", counts[0]},
                                    {"filtered", counts[1]},
                                    {"invalid", counts[2]},
                                    {"seconds", seconds},
                                    {"threads", a.threads},
                                    {"top", top_json(results, order, a.top)}}));
    return;
  }
  fmt::print("search {} on {} ({} GPUs), global batch {}; compute {}\n", model.name, topo.name,
             topo.gpus().size(), a.space.global_batch, compute);
  fmt::print(
      "{} configurations: {} simulated, {} out of memory ({} per GPU), {} invalid; {:.1f} s on {} "
      "threads\n\n",
      results.size(), counts[0], counts[1],
      o.memory_capacity > 0 ? human_string(Bytes(static_cast<std::int64_t>(o.memory_capacity))) : "no limit",
      counts[2], seconds, a.threads);
  Table tab({"rank", "configuration", "iteration", "samples/s", "TFLOP/s/GPU", "bubble", "exposed comm",
             "peak memory"});
  for (std::size_t k = 0; k < order.size() && static_cast<int>(k) < a.top; ++k) {
    const ps::Result& r = results[order[k]];
    tab.add({fmt::format("{}", k + 1), config_name(r.config), fmt::format("{:.3f} s", r.metrics.iteration_s),
             fmt::format("{:.2f}", r.metrics.samples_per_s), fmt::format("{:.1f}", r.metrics.tflops_per_gpu),
             fmt::format("{:.1f} %", 100 * r.metrics.bubble),
             fmt::format("{:.3f} s", r.metrics.exposed_comm_s()),
             human_string(Bytes(static_cast<std::int64_t>(r.peak_memory_bytes)))});
  }
  fmt::print("{}", tab.render({true, false, true, true, true, true, true, true}));
  if (!a.out.empty()) fmt::print("\nresults: {}/results.csv\n", a.out);
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = app.add_subcommand(
      "search",
      "Search data/tensor/pipeline splits, microbatching and schedules: every configuration simulated");
  cmd->footer(
      "Every split dp x tp x pp that fills the GPUs (tp inside a host unless --tp-across-hosts), every\n"
      "microbatch size dividing the per-replica batch, every schedule and stage transfer given, built\n"
      "as `meshsim pipeline` builds it and simulated in full. Configurations whose memory estimate\n"
      "(weights, gradients, optimizer state, activations in flight) exceeds the GPU's memory are\n"
      "counted and not simulated. Results do not depend on --threads.\n"
      "Example: meshsim search --model gpt3-13b -t dgx-a100 --hosts 8 --global-batch 512 \\\n"
      "           --schedules 1f1b,interleaved-1f1b --out search/");
  add_model_option(*cmd, a->model);
  a->topology.add_to(*cmd, "--topology");
  a->calibration.add_to(*cmd);
  add_compute_efficiency_option(*cmd, a->compute_efficiency);
  cmd->add_option("--global-batch", a->space.global_batch, "Samples per iteration")
      ->check(CLI::PositiveNumber)
      ->required();
  cmd->add_option("--gpus", a->space.gpus, "GPUs to use (default: all of the topology)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--microbatch-sizes", a->space.microbatch_sizes, "Microbatch sizes to try")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--schedules", a->schedules, "Schedules to try")
      ->delimiter(',')
      ->check(CLI::IsMember(planner::kScheduleNames.names()))
      ->capture_default_str();
  cmd->add_option("--virtual-stages", a->space.virtual_stages, "Model chunks per device for interleaved-1f1b")
      ->delimiter(',')
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  cmd->add_option("--reshards", a->reshards, "Stage transfer strategies to try")
      ->delimiter(',')
      ->check(CLI::IsMember(planner::kStrategyNames.names()))
      ->capture_default_str();
  cmd->add_flag("--tp-across-hosts", a->space.tp_across_hosts, "Also try tensor parallelism across hosts");
  cmd->add_option("--threads", a->threads, "Worker threads (default: every core)")->check(CLI::Range(1, 256));
  cmd->add_option("--top", a->top, "Rows of the ranking to print")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Directory for results.csv (every configuration and its status)");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a] { run_search(*a); });
}

}  // namespace meshsim::cli
