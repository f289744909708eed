// `meshsim calibrate`: measure this machine (runtime/calibrate.h) and write
// meshsim.calibration/1.

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/unit_strings.h"
#include "pipeline/pass_kernels.h"
#include "plan/calibration.h"
#include "runtime/calibrate.h"
#include "sim/compute_model.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_option.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"

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
};

Bytes size_option(const char* opt, const std::string& s) {
  return option_value(opt, s, parse_bytes);
}

void run_calibrate(const CalibrateArgs& a) {
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
  const plan::Calibration c = runtime::calibrate(o);
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
  cmd->add_flag("--json", a->json, "Also print the calibration when writing it");
  cmd->callback([a] { run_calibrate(*a); });
}

}  // namespace meshsim::cli
