#pragma once
// Workloads (`meshsim.workload/1`): several jobs on one cluster at once, so
// that each job's slowdown from sharing the fabric shows: its time together
// with the others against its time alone, on the same hosts.
//
// {"format": "meshsim.workload/1", "name": ..., "description": ...,
//  "topology": file (relative to the workload file) or preset,
//  "jobs": [
//    {"name": "a", "kind": "collective", "hosts": 16, "placement": "random:1",
//     "op": "allreduce", "size": "1GiB", "start": "0s", "repeat": 4},
//    {"name": "b", "kind": "pipeline", "hosts": 16, "model": "gpt3-13b",
//     "dp": 2, "tp": 8, "pp": 8, "microbatches": 16, "microbatch_size": 1,
//     "schedule": "1f1b", "zero": 1, "repeat": 2},
//    {"name": "ckpt", "kind": "traffic", "hosts": 4, "pattern": "incast",
//     "size": "2GiB", "period": "100ms", "repeat": 10}]}
//
// Hosts: jobs take hosts in file order from those still free: "hosts" of
// them, by "placement" (topology/placement.h, over the free hosts:
// contiguous the first free ones, spread evenly over them, random:SEED
// drawn from them), or exactly the hosts "placement": "hosts=LIST" names
// (their count is "hosts"; each must be free).
// Kinds:
//   collective  one collective over every GPU of its hosts, as `meshsim
//               collective` runs it ("algorithm": the table selects by
//               default, as the job's alone run would)
//   pipeline    one training iteration, as `meshsim pipeline` builds it
//               (the layout's GPUs must fill its hosts)
//   plan        a plan file (meshsim.plan/1) whose devices are named
//               "HOST/DEVICE": its hosts, in the order its devices first
//               name them, become the job's (its payloads are not carried:
//               a workload is timed, not verified)
//   traffic     background flows at a stated rate, as storage or
//               checkpoint traffic: each period, GPU 0 of every host sends
//               `size` — "incast" to the job's first host (a storage
//               server), "shift" to the next host of the job (ring
//               neighbours: a replicated checkpoint) — then waits for the
//               next period; its rate is size / period per host
// "start" (default 0) delays a job's first repeat; "repeat" (default 1)
// runs it that many times back to back (traffic: once per period).
// A job's time is from its start to the end of its last repeat; its
// slowdown is that time together over its time alone on the same hosts.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/units.h"
#include "model/model.h"
#include "pipeline/config.h"
#include "plan/collective.h"
#include "plan/plan.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::studies {

enum class JobKind : std::uint8_t { collective, pipeline, traffic, plan };
inline constexpr EnumNames<JobKind, 4> kJobKindNames{"job kind",
                                                     {{{JobKind::collective, "collective"},
                                                       {JobKind::pipeline, "pipeline"},
                                                       {JobKind::traffic, "traffic"},
                                                       {JobKind::plan, "plan"}}}};
enum class TrafficPattern : std::uint8_t { incast, shift };
inline constexpr EnumNames<TrafficPattern, 2> kTrafficPatternNames{
    "traffic pattern", {{{TrafficPattern::incast, "incast"}, {TrafficPattern::shift, "shift"}}}};

/// The most jobs one workload may hold and the most repeats of one
/// (docs/limits.md).
inline constexpr int kMaxWorkloadJobs = 256;
inline constexpr int kMaxJobRepeats = 10'000;

struct WorkloadJob {
  std::string name;
  JobKind kind = JobKind::collective;
  int hosts = 1;
  std::string placement;  // over the free hosts; empty: contiguous
  Time start;
  int repeat = 1;
  // collective
  plan::CollectiveOp op = plan::CollectiveOp::all_reduce;
  std::optional<plan::Algorithm> algorithm;  // none: the table selects
  Bytes size;                                // collective, traffic
  // pipeline
  std::string model;  // a preset name or a resolved path
  pipeline::PipelineConfig config;
  // plan
  std::string plan_file;  // resolved path
  // traffic
  TrafficPattern pattern = TrafficPattern::incast;
  Time period;
};

struct Workload {
  std::string name;
  std::string description;
  std::string topology;  // resolved path or preset name
  std::vector<WorkloadJob> jobs;
};

/// Reads a workload file; ConfigError naming the file and JSON path.
[[nodiscard]] Workload load_workload(const JsonCursor& root);

struct JobOutcome {
  std::string name;
  JobKind kind = JobKind::collective;
  std::vector<int> hosts;  // the cluster's host indices (as built), in rank order
  Time start;
  Time alone;     // from its start to its end, alone on the cluster
  Time together;  // the same with every job
  [[nodiscard]] double slowdown() const {
    return alone > Time::zero() ? together.seconds() / alone.seconds() : 1.0;
  }
};

struct WorkloadRun {
  std::vector<JobOutcome> jobs;
  plan::Plan plan;          // every job's tasks, ids "job/task"
  std::vector<int> job_of;  // per task of `plan`: its job
  sim::SimResult together;  // the whole plan simulated
};

/// Builds every job on `topo` (placing them, restoring its host order
/// after), simulates each alone and all together. `load_model` reads a
/// pipeline job's model. UsageError for a job that does not fit (more hosts
/// than are free, a layout that does not fill its hosts).
[[nodiscard]] WorkloadRun run_workload(const Workload& w, topology::Topology& topo,
                                       const std::function<model::Model(const std::string&)>& load_model,
                                       const sim::SimOptions& opts = {},
                                       const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace meshsim::studies
