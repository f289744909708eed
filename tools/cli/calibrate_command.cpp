// `meshsim calibrate`: measure this machine (runtime/calibrate.h) and write
// meshsim.calibration/1.

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "pipeline/pass_kernels.h"
#include "plan/calibration.h"
#include "plan/nccl_tests.h"
#include "runtime/calibrate.h"
#include "sim/compute_model.h"
#include "sim/nccl_fit.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_option.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/topology_source.h"

namespace meshsim::cli {

namespace {

struct CalibrateArgs {
  std::string backend = "host";
  std::string out;
  std::string min = "4KiB";
  std::string max;
  int repeats = 5;
  int threads = 0;
  bool json = false;
  std::vector<std::string> layers;
  std::vector<int> tps{1, 2, 4, 8};
  std::vector<int> microbatch_sizes{1, 2, 4, 8};
  std::vector<std::string> nccl_tests;  // --from-nccl-tests
  TopologySource topology;              // the cluster a network fit runs on
};

Bytes size_option(const char* opt, const std::string& s) {
  return option_value(opt, s, parse_bytes);
}

// The nccl backend's measured collectives as nccl-tests runs on this host's GPUs 0..n-1.
std::vector<plan::NcclTestsRun> runs_of(const plan::Calibration& c) {
  std::vector<plan::NcclTestsRun> out;
  for (const plan::CollectivePoint& p : c.collectives) {
    const std::string test = p.op + "_perf";
    auto run = std::find_if(out.begin(), out.end(), [&](const auto& r) { return r.test == test; });
    if (run == out.end()) {
      plan::NcclTestsRun r;
      r.test = test;
      r.op = plan::nccl_tests_op(test);
      if (r.op.empty()) continue;
      for (int g = 0; g < p.gpus; ++g) r.ranks.push_back({g, "this-host", g, ""});
      out.push_back(std::move(r));
      run = out.end() - 1;
    }
    run->rows.push_back({p.size, 0, "float", "", -1, p.time, 0, p.busbw_GBps, p.time});
  }
  return out;
}

// Fits the network's figures to `runs` on the cluster of -t and puts them,
// and the runs' rows, into `c`; prints what it fitted and how well.
void fit_network(const CalibrateArgs& a, const std::vector<plan::NcclTestsRun>& runs, plan::Calibration& c) {
  topology::Topology topo = a.topology.load();
  fmt::print(stderr, "calibrate: fitting {} runs ({} rows) on {}\n", runs.size(),
             std::accumulate(runs.begin(), runs.end(), std::size_t{0},
                             [](std::size_t n, const auto& r) { return n + r.rows.size(); }),
             topo.name);
  const sim::NcclFit fit = sim::fit_nccl_tests(runs, topo);
  c.links.clear();
  Table links({"link kind", "efficiency", "latency per hop", "rows", "rms error", "largest error"});
  for (const sim::NcclLinkFit& lf : fit.links) {
    c.links.push_back({lf.kind, lf.efficiency, lf.latency, lf.efficiency_spread, lf.latency_spread});
    links.add({lf.kind, fmt::format("{:.4f}", lf.efficiency), human_string(lf.latency),
               fmt::format("{}", lf.points), fmt::format("{:.1f} %", 100 * lf.rms_error),
               fmt::format("{:.1f} %", 100 * lf.max_abs_error)});
  }
  Table rows({"test", "GPUs", "size", "measured", "fitted", "error"});
  const bool record = c.collectives.empty();  // the nccl backend has recorded its own already
  for (const sim::NcclFitPoint& p : fit.points) {
    const plan::NcclTestsRun& r = runs[p.run];
    const plan::NcclTestsRow& w = r.rows[p.row];
    rows.add({r.test, fmt::format("{}", r.ranks.size()), human_string(w.size), human_string(p.measured),
              human_string(p.predicted), fmt::format("{:+.1f} %", 100 * p.error())});
    if (record)
      c.collectives.push_back({r.test.substr(0, r.test.size() - std::string_view("_perf").size()),
                               static_cast<int>(r.ranks.size()), w.size, w.time, w.busbw_GBps});
  }
  fmt::print(stderr, "{}\n{}", links.render({false, true, true, true, true, true}),
             rows.render({false, true, true, true, true, true}));
}

void run_from_nccl_tests(const CalibrateArgs& a) {
  if (a.topology.what.empty())
    throw UsageError(
        "--from-nccl-tests fits the network of a cluster: give it with -t (e.g. -t dgx-h100 --hosts 2)");
  std::vector<plan::NcclTestsRun> runs;
  for (const std::string& f : a.nccl_tests) runs.push_back(plan::load_nccl_tests_file(f));
  plan::Calibration c;
  c.backend = "nccl";
  c.machine =
      Json{{"source", "nccl-tests output"}, {"files", a.nccl_tests}, {"gpu", runs.front().ranks.front().gpu}};
  fit_network(a, runs, c);
  const std::string text = dump_json(plan::to_json(c));
  if (!a.out.empty()) write_text_file(a.out, text);
  if (a.json || a.out.empty())
    fmt::print("{}", text);
  else
    fmt::print("calibration (links fitted to nccl-tests output) written to {}\n", a.out);
}

void run_calibrate(const CalibrateArgs& a) {
  if (!a.nccl_tests.empty()) return run_from_nccl_tests(a);
  if (!a.topology.what.empty() && a.backend != "nccl")
    throw UsageError("-t gives the cluster a network fit runs on: with --backend nccl or --from-nccl-tests");
  runtime::CalibrateOptions o;
  o.backend = a.backend;
  o.min_size = size_option("--min", a.min);
  o.max_size =
      a.max.empty() ? (a.backend == "host" ? Bytes::MiB(256) : Bytes::GiB(1)) : size_option("--max", a.max);
  o.repeats = a.repeats;
  o.threads = a.threads;
  o.progress = [](const std::string& line) { fmt::print(stderr, "calibrate: {}\n", line); };
  o.peak_flops = [](std::string_view gpu_model, plan::DType dt) {
    const sim::DeviceModel* m = sim::find_device_model(gpu_model);
    return m == nullptr ? 0.0 : m->peak(dt);
  };
  if (!a.layers.empty() && a.backend != "cuda")
    throw UsageError("--layers times GEMMs on a GPU: it needs --backend cuda");
  for (const std::string& name : a.layers)
    for (auto& k : pipeline::calibration_kernel_lists(load_model_arg(name), a.tps, a.microbatch_sizes))
      o.layers.push_back(std::move(k));
  plan::Calibration c = runtime::calibrate(o);
  if (!a.topology.what.empty()) fit_network(a, runs_of(c), c);
  const std::string text = dump_json(plan::to_json(c));
  if (!a.out.empty()) write_text_file(a.out, text);
  if (a.json || a.out.empty()) {
    fmt::print("{}", text);
  } else {
    fmt::print("calibration ({} backend) written to {}\n", c.backend, a.out);
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Measure this machine and write meshsim.calibration/1 (docs/calibration-format.md):\n"
      "  host  memcpy latency and bandwidth versus size, and on every thread at once\n"
      "  cuda  device copies (one and 8 streams at once), host<->device, every peer pair,\n"
      "        cuBLAS GEMM efficiency per dtype, kernel launch overhead; with --layers, the\n"
      "        time of every GEMM of those models' layers, which then replaces the GEMM model\n"
      "        for exactly those shapes\n"
      "  nccl  all-reduce, all-gather and broadcast busbw versus size over every GPU");
  cmd->add_option("--backend,-b", a->backend, "host, cuda or nccl (default host)")
      ->check(CLI::IsMember({"host", "cuda", "nccl"}));
  cmd->add_option("--out,-o", a->out, "Write the calibration here (default: print it)")->check(output_file());
  cmd->add_option("--min", a->min, "Smallest size (default 4KiB); sizes grow 4x");
  cmd->add_option("--max", a->max, "Largest size (default 256MiB host, 1GiB GPU)");
  cmd->add_option("--repeats", a->repeats, "Runs per size; the fastest counts (default 5)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--threads", a->threads, "host: threads for the aggregate copy (default: the hardware's)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--layers", a->layers,
                  "cuda: models (files or names from configs/models/) whose GEMMs are timed for every\n"
                  "--tp and --microbatch-sizes: a GPT model's one layer, forward and backward; a layer\n"
                  "list with kernels (the U-Nets), its whole forward and backward pass, every layer split\n"
                  "over the ranks by channels and, where the microbatch divides, by batch")
      ->delimiter(',');
  cmd->add_option("--tp", a->tps, "With --layers: tensor-parallel degrees (default 1,2,4,8)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--microbatch-sizes", a->microbatch_sizes,
                  "With --layers: sequences (samples) per microbatch (default 1,2,4,8)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--from-nccl-tests", a->nccl_tests,
                  "Instead of measuring: nccl-tests output files (all_reduce_perf, all_gather_perf, "
                  "reduce_scatter_perf, alltoall_perf, broadcast_perf, sendrecv_perf; one host or several) "
                  "whose times fit the NVLink and network efficiency and latency per hop on the cluster of "
                  "-t, through the collective model every command runs")
      ->check(CLI::ExistingFile);
  a->topology.add_to(*cmd, "--topology", false);
  cmd->add_flag("--json", a->json, "Also print the calibration when writing it");
  cmd->callback([a] { run_calibrate(*a); });
}

}  // namespace meshsim::cli
