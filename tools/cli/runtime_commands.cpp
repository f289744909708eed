// `meshsim run` and `meshsim validate`: the plan on
// real memory (host, cuda, nccl backends), and the simulator's prediction
// compared with the measurement.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/json_writer.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "plan/calibration.h"
#include "plan/compare.h"
#include "plan/plan_json.h"
#include "plan/scale.h"
#include "runtime/calibrate.h"
#include "runtime/cuda_backend.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/nccl_backend.h"
#include "runtime/work.h"
#include "sim/calibrate_apply.h"
#include "sim/executor.h"
#include "sim/plan_devices.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/topology_source.h"
#include "tools/cli/trace_option.h"
#include "topology/virtual_gpu.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

namespace {

struct BackendArgs {
  std::string backend = "host";
  int threads = 0;
  int device = 0;
  std::string timeout = "60s";
  int iterations = 1;
  int warmup = -1;  // -1: 0 on host; 1 on cuda and nccl (module loading, cuBLAS and NCCL set-up)
  bool no_verify = false;
  bool require_verify = false;
  int scale = 1;

  void add_to(CLI::App& cmd, int default_iterations) {
    iterations = default_iterations;
    cmd.add_option("--backend,-b", backend,
                   "host (always built: plan devices are host memory), cuda (virtual devices on one GPU) or "
                   "nccl (one GPU per plan device)")
        ->check(CLI::IsMember({"host", "cuda", "nccl"}));
    cmd.add_option("--iterations", iterations,
                   fmt::format("Timed runs; the median is reported (default {})", default_iterations))
        ->check(CLI::Range(1, 100000));
    cmd.add_option("--warmup", warmup,
                   warmup < 0 ? "Untimed runs first (default: 0 on host, 1 on cuda and nccl)"
                              : fmt::format("Untimed runs first (default {})", warmup))
        ->check(CLI::Range(0, 100000));
    cmd.add_option("--threads", threads, "host: worker threads (default: the hardware's)")
        ->check(CLI::Range(0, 4096));
    cmd.add_option("--device", device, "cuda: the GPU to use (default 0)")->check(CLI::Range(0, 1023));
    cmd.add_option("--timeout", timeout,
                   "Give up when no task finishes for this long (default 60s; exit status 4, as for a CUDA "
                   "or NCCL fault); on host, a compute task longer than this is refused before the run");
    auto* nv = cmd.add_flag("--no-verify", no_verify, "Skip the byte check after the run");
    cmd.add_flag("--verify", require_verify,
                 "Insist on the byte check: refuse a plan that carries no payloads (a timing-only plan, "
                 "which has no bytes to check)")
        ->excludes(nv);
    cmd.add_option("--scale", scale,
                   "Run the plan with every payload tensor and transfer N times smaller along the tensor's "
                   "longest dimension, its layout kept, so that a large model's plan runs and verifies in "
                   "less memory (default 1)")
        ->check(CLI::Range(1, 1 << 30));
  }

  /// The plan in `file`, scaled down by --scale.
  [[nodiscard]] plan::LoadedPlan load(const std::string& file) const {
    plan::LoadedPlan loaded = plan::load_plan(file);
    if (scale == 1) return loaded;
    return plan::scaled_plan(loaded.plan, scale, file);
  }

  /// UsageError when --verify asks for a check that `plan` cannot have.
  void check_verifiable(const plan::Plan& plan, const std::string& file) const {
    if (require_verify && !plan::carries_payload(plan))
      throw UsageError(fmt::format(
          "{} is timing-only: no task carries a payload, so there are no bytes to verify (drop --verify "
          "to time it)",
          file));
  }

  [[nodiscard]] int warmup_runs() const { return warmup >= 0 ? warmup : backend == "host" ? 0 : 1; }

  [[nodiscard]] Time timeout_time() const {
    const Time t = option_value("--timeout", timeout, parse_time);
    if (t <= Time::zero()) throw UsageError("--timeout must be positive");
    return t;
  }

  [[nodiscard]] std::unique_ptr<runtime::Backend> make(runtime::ComputeTime compute) const {
    const Time limit = timeout_time();  // checked on every backend, used by the GPU ones
    if (backend == "cuda")
      return runtime::make_cuda_backend({.device = device, .timeout = limit, .compute_time = compute});
    if (backend == "nccl") return runtime::make_nccl_backend({.timeout = limit, .compute_time = compute});
    return runtime::make_host_backend({.threads = threads, .compute_time = compute, .timeout = limit});
  }
};

Json mismatches_json(const runtime::Verification& v) {
  Json out = Json::array();
  for (const auto& m : v.mismatches)
    out.push_back(Json{{"task", m.task},
                       {"buffer", m.buffer},
                       {"device", m.device},
                       {"tensor", m.tensor},
                       {"index", m.index},
                       {"coords", m.coords},
                       {"expected", m.expected},
                       {"actual", m.actual},
                       {"bad_elements", m.bad_in_buffer}});
  return out;
}

std::string verification_line(const runtime::RunReport& rep) {
  if (rep.timing_only) return "timing-only: no task carries a payload, so no bytes were checked";
  if (!rep.verified) return "not verified (--no-verify)";
  const auto& v = rep.check;
  if (v.ok)
    return fmt::format("verified: {} elements in {} destination buffers, all correct", v.elements_checked,
                       v.buffers_checked);
  std::string s =
      fmt::format("VERIFICATION FAILED: {} of {} elements wrong", v.bad_elements, v.elements_checked);
  for (const auto& m : v.mismatches) s += fmt::format("\n  {}", m.describe());
  return s;
}

void print_notes(const runtime::RunReport& rep) {
  for (const auto& n : rep.notes) fmt::print("note: {}\n", n);
}

// ---- run ----

struct RunArgs {
  std::string plan;
  std::optional<std::string> topology;
  BackendArgs backend;
  CalibrationOption calibration;
  std::string trace;
  TraceDetailOption trace_detail;
  std::string csv;
  bool json = false;
};

void run_run(RunArgs& a) {
  const plan::LoadedPlan loaded = a.backend.load(a.plan);
  const plan::Plan& plan = loaded.plan;
  a.backend.check_verifiable(plan, a.plan);
  std::optional<topology::Topology> topo;
  sim::SimOptions opts;
  if (a.topology) {
    TopologySource src;
    src.what = *a.topology;
    topo = src.load();
    (void)sim::plan_nodes(plan, *topo, a.plan);
    a.calibration.check_gpu =
        a.backend.backend == "nccl";  // host, cuda: virtual devices of the calibrated GPU
    a.calibration.apply(*topo, opts);
  }
  // The host backend waits, and the cuda backend without cuBLAS spins, for the roofline's time.
  auto backend = a.backend.make(topo ? sim::roofline_stand_in(*topo, opts) : runtime::ComputeTime{});
  const auto rep = runtime::run_plan(plan, loaded.schedule, *backend,
                                     {.warmup = a.backend.warmup_runs(),
                                      .iterations = a.backend.iterations,
                                      .verify = !a.backend.no_verify});
  if (!a.trace.empty()) {
    const topology::Topology shown =
        topo ? std::move(*topo)
             : topology::virtual_gpu_topology(plan.devices, "", Bandwidth::GBps(1), Bandwidth::GBps(1),
                                              Time::zero())
                   .topology;
    write_trace(a.trace, a.trace_detail.value(), plan, shown, rep.timeline);
  }
  if (!a.csv.empty())
    write_file(a.csv, [&](std::ostream& out) { traces::write_task_csv(out, plan, rep.timeline); });
  const double moved = static_cast<double>(rep.payload_bytes + rep.scratch_bytes);
  if (a.json) {
    Json spans = Json::array();
    for (Time t : rep.makespans) spans.push_back(t.microseconds());
    write_stdout([&](std::ostream& out) {
      JsonWriter w(out, Json{{"plan", plan.name},
                             {"backend", rep.backend},
                             {"backend_description", rep.backend_description},
                             {"notes", rep.notes},
                             {"makespan_us", rep.timeline.makespan.microseconds()},
                             {"makespans_us", std::move(spans)},
                             {"payload_bytes", rep.payload_bytes},
                             {"scratch_bytes", rep.scratch_bytes},
                             {"timing_only", rep.timing_only},
                             {"verified", rep.verified},
                             {"ok", !rep.verified || rep.check.ok},
                             {"buffers_checked", rep.check.buffers_checked},
                             {"elements_checked", rep.check.elements_checked},
                             {"bad_elements", rep.check.bad_elements},
                             {"mismatches", mismatches_json(rep.check)},
                             {"tasks", Json::array()}});
      w.begin_array("tasks");  // one at a time: a plan may have millions
      for (std::size_t i = 0; i < plan.tasks.size(); ++i)
        w.add(Json{{"id", plan.tasks[i].id},
                   {"start_us", rep.timeline.tasks[i].start.microseconds()},
                   {"end_us", rep.timeline.tasks[i].end.microseconds()}});
      w.end_array();
      w.finish();
    });
  } else {
    fmt::print("plan {}: {} tasks on the {} backend ({})\n", plan.name.empty() ? a.plan : plan.name,
               plan.tasks.size(), rep.backend, rep.backend_description);
    Time lo = rep.makespans.front();
    Time hi = lo;
    for (Time t : rep.makespans) {
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    fmt::print("makespan {} (median of {}; min {}, max {}), {} moved, {}\n",
               human_string(rep.timeline.makespan), rep.makespans.size(), human_string(lo), human_string(hi),
               human_string(Bytes(static_cast<std::int64_t>(moved))),
               rep.timeline.makespan > Time::zero()
                   ? fmt::format("{:.2f} GB/s", moved / rep.timeline.makespan.seconds() / 1e9)
                   : std::string("-"));
    fmt::print("{}\n", verification_line(rep));
    print_notes(rep);
    if (!a.trace.empty()) fmt::print("trace: {} (open in ui.perfetto.dev)\n", a.trace);
    if (!a.csv.empty()) fmt::print("task table: {}\n", a.csv);
  }
  if (rep.verified && !rep.check.ok)
    throw VerificationFailed(fmt::format("{} elements did not arrive as planned", rep.check.bad_elements));
}

// ---- validate ----

struct ValidateArgs {
  std::string plan;
  TopologySource topology;
  BackendArgs backend;
  CalibrationOption calibration;
  std::string trace_measured;
  std::string trace_predicted;
  TraceDetailOption trace_detail;
  std::size_t top = 15;
  double tolerance = 0.10;
  bool json = false;
  std::optional<plan::Calibration> measured;  // host: measured here when --calibration is not given
};

// Whether the makespan prediction is within ±tolerance of the measurement.
bool within_tolerance(const ValidateArgs& a, const plan::TimelineComparison& cmp) {
  return cmp.makespan_error && std::abs(*cmp.makespan_error) <= a.tolerance;
}

Json optional_json(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string percent(const std::optional<double>& v) {
  return v ? fmt::format("{:+.1f} %", 100 * *v) : std::string("-");
}

// What validate compares, for the printers.
struct Validation {
  const plan::Plan& plan;
  const topology::Topology& model;
  const sim::SimResult& predicted;
  const runtime::RunReport& measured;
  plan::TimelineComparison cmp;
};

void print_validation_json(const ValidateArgs& a, const Validation& v) {
  const runtime::RunReport& rep = v.measured;
  write_stdout([&](std::ostream& out) {
    JsonWriter w(out, Json{{"plan", v.plan.name},
                           {"backend", rep.backend},
                           {"backend_description", rep.backend_description},
                           {"notes", rep.notes},
                           {"model", v.model.name},
                           {"calibration", a.calibration.file},
                           {"predicted_us", v.predicted.makespan.microseconds()},
                           {"measured_us", rep.timeline.makespan.microseconds()},
                           {"error", optional_json(v.cmp.makespan_error)},
                           {"tolerance", a.tolerance},
                           {"within_tolerance", within_tolerance(a, v.cmp)},
                           {"mean_abs_task_error", v.cmp.mean_abs_task_error},
                           {"timing_only", rep.timing_only},
                           {"verified", rep.verified},
                           {"ok", !rep.verified || rep.check.ok},
                           {"mismatches", mismatches_json(rep.check)},
                           {"tasks", Json::array()}});
    w.begin_array("tasks");  // one at a time: a plan may have millions
    for (std::size_t i = 0; i < v.plan.tasks.size(); ++i)
      w.add(Json{{"id", v.plan.tasks[i].id},
                 {"kind", std::string(plan::to_string(v.plan.tasks[i].kind))},
                 {"predicted_start_us", v.predicted.tasks[i].start.microseconds()},
                 {"predicted_us", v.cmp.tasks[i].predicted.microseconds()},
                 {"measured_start_us", v.measured.timeline.tasks[i].start.microseconds()},
                 {"measured_us", v.cmp.tasks[i].measured.microseconds()},
                 {"error", optional_json(v.cmp.tasks[i].error)}});
    w.end_array();
    w.finish();
  });
}

void print_validation_text(const ValidateArgs& a, const Validation& v) {
  const runtime::RunReport& rep = v.measured;
  fmt::print("plan {}: {} tasks; predicted on {}, measured on the {} backend ({})\n",
             v.plan.name.empty() ? a.plan : v.plan.name, v.plan.tasks.size(), v.model.name, rep.backend,
             rep.backend_description);
  fmt::print("makespan: predicted {}, measured {} (median of {}), error {}\n",
             human_string(v.predicted.makespan), human_string(rep.timeline.makespan), rep.makespans.size(),
             percent(v.cmp.makespan_error));
  fmt::print("mean |task error| {:.1f} %\n\n", 100 * v.cmp.mean_abs_task_error);
  std::vector<std::size_t> order = v.cmp.largest_errors_first();
  if (order.size() > a.top) order.resize(a.top);
  Table t({"task (largest errors first)", "kind", "predicted", "measured", "error"});
  for (std::size_t i : order)
    t.add({v.plan.tasks[i].id, std::string(plan::to_string(v.plan.tasks[i].kind)),
           human_string(v.cmp.tasks[i].predicted), human_string(v.cmp.tasks[i].measured),
           percent(v.cmp.tasks[i].error)});
  fmt::print("{}\n{}\n", t.render({false, false, true, true, true}), verification_line(rep));
  print_notes(rep);
  if (!a.trace_predicted.empty())
    fmt::print("traces: {} (predicted), {} (measured); open both in ui.perfetto.dev\n", a.trace_predicted,
               a.trace_measured.empty() ? std::string("-") : a.trace_measured);
}

// The calibration validate predicts with: one made with the same backend.
const plan::Calibration* matching_calibration(ValidateArgs& a) {
  const plan::Calibration* cal = a.calibration.get();
  const std::string& b = a.backend.backend;
  if (cal != nullptr && cal->backend != b)
    throw UsageError(
        fmt::format("{} was measured with the {} backend; validate --backend {} needs a calibration "
                    "from `meshsim calibrate --backend {}`",
                    a.calibration.file, cal->backend, b, b));
  if (b == "host" && cal == nullptr) {
    // A second of copies measures the host's fit: nothing to prepare first.
    fmt::print(stderr,
               "validate: no --calibration: measuring this host's copies first (`meshsim calibrate "
               "--backend host --out FILE` keeps them for --calibration FILE)\n");
    runtime::CalibrateOptions o;
    o.threads = a.backend.threads;
    a.measured = runtime::calibrate(o);
    cal = &*a.measured;
  }
  if (b != "nccl" && (cal == nullptr || !cal->copy))
    throw UsageError(fmt::format(
        "validate --backend {} needs --calibration from `meshsim calibrate --backend {}`: its copy "
        "fit describes the virtual devices the plan runs on",
        b, b));
  return cal;
}

void run_validate(ValidateArgs& a) {
  const plan::LoadedPlan loaded = a.backend.load(a.plan);
  const plan::Plan& plan = loaded.plan;
  a.backend.check_verifiable(plan, a.plan);
  topology::Topology topo = a.topology.load();
  (void)sim::plan_nodes(plan, topo, a.plan);
  sim::SimOptions opts;
  a.calibration.check_gpu = a.backend.backend == "nccl";  // host, cuda: virtual devices of the calibrated GPU
  a.calibration.apply(topo, opts);
  const plan::Calibration* cal = matching_calibration(a);
  // The prediction's machine: the topology itself for nccl (real GPUs); for
  // host and cuda the plan devices are virtual devices of one memory.
  std::optional<topology::VirtualGpu> virt;
  if (a.backend.backend != "nccl") {
    virt = sim::virtual_machine(plan, topo, *cal);
    opts.shared_link = virt->memory;
  }
  const topology::Topology& model_topo = virt ? virt->topology : topo;
  opts.record_link_timeline = !a.trace_predicted.empty();
  const sim::SimResult predicted = sim::simulate(plan, loaded.schedule, model_topo, opts);

  auto backend = a.backend.make(sim::roofline_stand_in(model_topo, opts));
  const auto rep = runtime::run_plan(plan, loaded.schedule, *backend,
                                     {.warmup = a.backend.warmup_runs(),
                                      .iterations = a.backend.iterations,
                                      .verify = !a.backend.no_verify});
  if (!a.trace_predicted.empty())
    write_trace(a.trace_predicted, a.trace_detail.value(), plan, model_topo, predicted);
  if (!a.trace_measured.empty())
    write_trace(a.trace_measured, a.trace_detail.value(), plan, model_topo, rep.timeline);
  const Validation v{plan, model_topo, predicted, rep,
                     plan::compare_timelines(predicted.timeline(), rep.timeline)};
  (a.json ? print_validation_json : print_validation_text)(a, v);
  if (rep.verified && !rep.check.ok)
    throw VerificationFailed(fmt::format("{} elements did not arrive as planned", rep.check.bad_elements));
  if (!within_tolerance(a, v.cmp))
    throw VerificationFailed(fmt::format(
        "the prediction is outside the tolerance: predicted {}, measured {} on the {} backend, error {} "
        "(--tolerance {:g} %)",
        human_string(predicted.makespan), human_string(rep.timeline.makespan), rep.backend,
        percent(v.cmp.makespan_error), 100 * a.tolerance));
}

}  // namespace

void add_runtime_commands(CLI::App& app) {
  {
    auto a = std::make_shared<RunArgs>();
    auto* cmd = app.add_subcommand(
        "run",
        "Execute a plan for real and verify every destination byte (exit 1 if any is wrong).\n"
        "Sources hold a hash of each element's global index; after the run every destination tile is\n"
        "compared and a mismatch names the task, buffer, device, index, expected and actual bytes");
    cmd->add_option("plan", a->plan, "Plan file (meshsim.plan/1)")->required();
    a->backend.add_to(*cmd, 1);
    cmd->add_option(
        "--topology,-t", a->topology,
        "Topology for the trace's hosts and, on the host backend, the roofline that compute tasks "
        "wait for (default: compute tasks without a duration take no time)");
    a->calibration.add_with_profile_to(*cmd);
    cmd->add_option("--trace", a->trace, "Write the measured timeline as a Perfetto trace")
        ->check(output_file());
    a->trace_detail.add_to(*cmd);
    cmd->add_option("--csv", a->csv, "Write the measured timeline, one row per task")->check(output_file());
    cmd->add_flag("--json", a->json, "Print one JSON document instead of text");
    cmd->callback([a, cmd] {
      warn_needless(*cmd, {{"--trace-detail", "--trace"}});
      run_run(*a);
    });
  }
  {
    auto a = std::make_shared<ValidateArgs>();
    auto* cmd = app.add_subcommand(
        "validate",
        "Run a plan for real and in the simulator; report predicted versus measured time per task\n"
        "and overall. host and cuda run plan devices as virtual devices of one memory, so their\n"
        "prediction uses the virtual-device model from --calibration (meshsim calibrate with the same\n"
        "backend; on host, measured first, in about a second, when not given); nccl predicts on\n"
        "--topology");
    cmd->add_option("plan", a->plan, "Plan file (meshsim.plan/1)")->required();
    a->topology.add_to(*cmd, "--topology");
    a->backend.warmup = 1;
    a->backend.add_to(*cmd, 5);
    a->calibration.add_with_profile_to(*cmd);
    cmd->add_option("--trace-predicted", a->trace_predicted, "Write the simulated timeline (Perfetto)")
        ->check(output_file());
    cmd->add_option("--trace-measured", a->trace_measured, "Write the measured timeline (Perfetto)")
        ->check(output_file());
    a->trace_detail.add_to(*cmd);
    cmd->add_option("--top", a->top, "Tasks listed, largest errors first (default 15)")
        ->check(CLI::Range(1, 100000));
    cmd->add_option("--tolerance", a->tolerance,
                    "The makespan error the prediction may have, a fraction (default 0.1: ±10 %); outside "
                    "it, or when a byte does not verify, validate exits 1 after its report")
        ->check(number_in(0.0, 1e6));
    cmd->add_flag("--json", a->json, "Print one JSON document with every task");
    cmd->callback([a] { run_validate(*a); });
  }
}

}  // namespace meshsim::cli
