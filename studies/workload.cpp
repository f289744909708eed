#include "studies/workload.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"
#include "pipeline/iteration.h"
#include "plan/plan_json.h"
#include "topology/cluster.h"
#include "topology/placement.h"

namespace meshsim::studies {

namespace {

constexpr const char* kFormat = "meshsim.workload/1";

template <typename E, std::size_t N>
E enum_from(const JsonCursor& c, const EnumNames<E, N>& names) {
  const auto v = names.parse(c.as_string());
  if (!v) c.fail(fmt::format("unknown {} \"{}\" (expected {})", names.what(), c.as_string(), names.list()));
  return *v;
}

void pipeline_from_json(const JsonCursor& c, const std::string& file, WorkloadJob& j) {
  j.model = c["model"].as_string();
  if (j.model.ends_with(".json")) j.model = resolve_beside(file, j.model);
  pipeline::PipelineConfig& cfg = j.config;
  cfg.dp = static_cast<int>(c["dp"].as_int_in(1, 1 << 20));
  cfg.tp = static_cast<int>(c["tp"].as_int_in(1, 1 << 20));
  cfg.pp = static_cast<int>(c["pp"].as_int_in(1, 1 << 20));
  cfg.microbatches = static_cast<int>(c["microbatches"].as_int_in(1, 1 << 20));
  if (auto v = c.find("microbatch_size")) cfg.microbatch_size = static_cast<int>(v->as_int_in(1, 1 << 20));
  if (auto v = c.find("schedule")) cfg.schedule = enum_from(*v, model::kScheduleNames);
  if (auto v = c.find("zero")) cfg.zero = static_cast<model::ZeroStage>(v->as_int_in(0, 3));
  if (auto v = c.find("recompute")) cfg.recompute = enum_from(*v, model::kRecomputeNames);
  if (auto v = c.find("sequence_parallel")) cfg.sequence_parallel = v->as_bool();
  if (auto v = c.find("flash_attention")) cfg.flash_attention = v->as_bool();
}

WorkloadJob job_from_json(const JsonCursor& c, const std::string& file) {
  WorkloadJob j;
  j.name = c["name"].as_name();
  j.kind = enum_from(c["kind"], kJobKindNames);
  std::vector<std::string_view> keys{"name", "kind", "hosts", "placement", "start", "repeat"};
  switch (j.kind) {
    case JobKind::collective: keys.insert(keys.end(), {"op", "size", "algorithm"}); break;
    case JobKind::pipeline:
      keys.insert(keys.end(), {"model", "dp", "tp", "pp", "microbatches", "microbatch_size", "schedule",
                               "zero", "recompute", "sequence_parallel", "flash_attention"});
      break;
    case JobKind::traffic: keys.insert(keys.end(), {"pattern", "size", "period"}); break;
    case JobKind::plan: keys.emplace_back("plan"); break;
  }
  c.allow_only(std::span<const std::string_view>(keys));
  j.hosts = static_cast<int>(c["hosts"].as_int_in(1, topology::kMaxHosts));
  if (auto p = c.find("placement")) j.placement = topology::placement_from_json(*p);
  if (auto s = c.find("start")) {
    j.start = s->as_time();
    if (j.start < Time::zero() || j.start > Time::s(3600)) s->fail("a start is between 0 and 1 hour");
  }
  if (auto r = c.find("repeat")) j.repeat = static_cast<int>(r->as_int_in(1, kMaxJobRepeats));
  switch (j.kind) {
    case JobKind::collective: {
      const JsonCursor op = c["op"];
      const auto o = plan::op_from(op.as_string());
      if (!o)
        op.fail(fmt::format("unknown collective \"{}\" (expected {})", op.as_string(), plan::op_names()));
      j.op = *o;
      j.size = c["size"].as_bytes();
      if (auto a = c.find("algorithm"); a && a->as_string() != "auto")
        j.algorithm = enum_from(*a, plan::kAlgorithmNames);
      break;
    }
    case JobKind::pipeline: pipeline_from_json(c, file, j); break;
    case JobKind::plan: j.plan_file = resolve_beside(file, c["plan"].as_string()); break;
    case JobKind::traffic:
      j.pattern = enum_from(c["pattern"], kTrafficPatternNames);
      j.size = c["size"].as_bytes();
      j.period = c["period"].as_time();
      if (j.period <= Time::zero() || j.period > Time::s(3600))
        c["period"].fail("a period is above 0 and at most 1 hour");
      break;
  }
  if ((j.kind == JobKind::collective || j.kind == JobKind::traffic) && j.size <= Bytes(0))
    c["size"].fail("a size is above 0");
  return j;
}

// The job's hosts among those still free (cluster indices as built).
std::vector<int> allocate(const WorkloadJob& j, std::vector<int>& free, int cluster_hosts) {
  const topology::Placement p = topology::parse_placement(j.placement.empty() ? "contiguous" : j.placement);
  std::vector<int> out;
  if (p.kind == topology::PlacementKind::hosts) {
    out = topology::placed_hosts(p, cluster_hosts, j.hosts);
    for (int h : out)
      if (std::find(free.begin(), free.end(), h) == free.end())
        throw UsageError(fmt::format("job \"{}\": host {} is taken by an earlier job", j.name, h));
  } else {
    if (j.hosts > static_cast<int>(free.size()))
      throw UsageError(fmt::format("job \"{}\" needs {} hosts; {} of the cluster's {} are free", j.name,
                                   j.hosts, free.size(), cluster_hosts));
    for (int k : topology::placed_hosts(p, static_cast<int>(free.size()), j.hosts))
      out.push_back(free[static_cast<std::size_t>(k)]);
  }
  for (int h : out) free.erase(std::find(free.begin(), free.end(), h));
  return out;
}

// Puts the topology's hosts back in their built order when it goes.
struct RestoreHostOrder {
  explicit RestoreHostOrder(topology::Topology& topology) : t(topology) {}
  RestoreHostOrder(const RestoreHostOrder&) = delete;
  RestoreHostOrder& operator=(const RestoreHostOrder&) = delete;
  // Restoring allocates; the topology is put back in order again before
  // its next placement (run_workload, place), so a failure here is left.
  ~RestoreHostOrder() {
    try {
      t.restore_host_order();
    } catch (...) {  // nothing may leave a destructor
    }
  }
  topology::Topology& t;
};

// The GPUs of `hosts`, host by host (names: placing does not change them).
std::vector<std::string> gpu_names(topology::Topology& t, const std::vector<int>& hosts) {
  topology::place(t, topology::Placement{topology::PlacementKind::hosts, 1, hosts},
                  static_cast<int>(hosts.size()));
  std::vector<std::string> out;
  for (std::size_t k = 0; k < hosts.size(); ++k)
    for (topology::NodeId g : t.host_gpus(static_cast<int>(k))) out.push_back(t.node(g).name);
  t.restore_host_order();
  return out;
}

// One repeat of a job, as a plan of its own.
plan::Plan collective_plan(const WorkloadJob& j, const std::vector<std::string>& gpus) {
  plan::Plan p;
  plan::Task task;
  task.id = "collective";
  task.kind = plan::TaskKind::collective;
  task.op = j.op;
  task.size = j.size;
  task.algorithm = j.algorithm;
  for (const auto& g : gpus) task.devices.push_back(plan::device_index(p, g));
  p.tasks.push_back(std::move(task));
  return p;
}

// One period of background traffic: GPU 0 of every host sends to its
// target, and a wait of one period on the job's first GPU (another stream)
// marks when the next period may start.
plan::Plan traffic_plan(const WorkloadJob& j, topology::Topology& t, const std::vector<int>& hosts) {
  plan::Plan p;
  std::vector<std::string> first;  // GPU 0 of each host
  for (int h : hosts) first.push_back(t.node(t.host_gpus(h).front()).name);
  plan::Task wait;
  wait.id = "period";
  wait.devices = {plan::device_index(p, first.front())};
  wait.stream = 1;
  wait.duration = j.period;
  p.tasks.push_back(wait);
  for (std::size_t k = 0; k < first.size(); ++k) {
    const std::size_t to = j.pattern == TrafficPattern::incast ? 0 : (k + 1) % first.size();
    if (to == k) continue;
    plan::Task send;
    send.id = fmt::format("send{}", k);
    send.kind = plan::TaskKind::send;
    send.devices = {plan::device_index(p, first[k]), plan::device_index(p, first[to])};
    send.size = j.size;
    p.tasks.push_back(std::move(send));
  }
  return p;
}

// A plan file's plan with its hosts moved onto the job's: the k-th host its
// devices name ("HOST/DEVICE", in order of first appearance) becomes the
// job's k-th.
plan::Plan plan_on_hosts(plan::Plan p, const topology::Topology& t, const std::vector<int>& hosts,
                         const std::string& job) {
  std::vector<std::string> seen;
  for (std::string& d : p.devices) {
    const auto slash = d.find('/');
    if (slash == std::string::npos)
      throw UsageError(
          fmt::format("job \"{}\": the plan's device \"{}\" names no host (HOST/DEVICE)", job, d));
    const std::string host = d.substr(0, slash);
    const auto k = static_cast<std::size_t>(std::find(seen.begin(), seen.end(), host) - seen.begin());
    if (k == seen.size()) seen.push_back(host);
    if (k >= hosts.size())
      throw UsageError(
          fmt::format("job \"{}\": its plan spans more than its {} hosts (\"{}\")", job, hosts.size(), d));
    d = t.hosts()[static_cast<std::size_t>(hosts[k])].name + d.substr(slash);
  }
  return p;
}

// Appends `part` to `into`: devices by name, task ids prefixed, deps
// offset; payloads dropped (a workload is timed, not verified). Returns the
// index of its first task.
std::size_t append(plan::Plan& into, const plan::Plan& part, const std::string& prefix) {
  const std::size_t base = into.tasks.size();
  const std::size_t kernel_base = into.kernel_sets.size();
  into.kernel_sets.insert(into.kernel_sets.end(), part.kernel_sets.begin(), part.kernel_sets.end());
  std::vector<std::size_t> device(part.devices.size());
  for (std::size_t d = 0; d < part.devices.size(); ++d) device[d] = plan::device_index(into, part.devices[d]);
  for (const plan::Task& t : part.tasks) {
    plan::Task c = t;
    c.id = prefix + t.id;
    for (auto& d : c.devices) d = device[d];
    for (auto& d : c.deps) d += base;
    c.payload.clear();
    if (c.kernels) *c.kernels += kernel_base;
    into.tasks.push_back(std::move(c));
  }
  return base;
}

// A job's plan: its start delay, then its repeats back to back (each
// repeat's first tasks after every last task of the one before; traffic:
// each period after the last period's wait).
struct JobPlan {
  plan::Plan plan;
};

JobPlan job_plan(const WorkloadJob& j, const plan::Plan& one) {
  JobPlan out;
  std::vector<std::size_t> sinks;  // of the previous repeat
  if (j.start > Time::zero()) {
    plan::Task delay;
    delay.id = "start";
    delay.devices = {plan::device_index(out.plan, one.devices.front())};
    delay.stream = 2;
    delay.duration = j.start;
    out.plan.tasks.push_back(delay);
    sinks = {0};
  }
  for (int r = 0; r < j.repeat; ++r) {
    const std::size_t base = append(out.plan, one, j.repeat > 1 ? fmt::format("r{}/", r) : std::string());
    std::vector<bool> has_dependent(one.tasks.size(), false);
    for (const plan::Task& t : one.tasks)
      for (std::size_t d : t.deps) has_dependent[d] = true;
    for (std::size_t i = 0; i < one.tasks.size(); ++i) {
      plan::Task& t = out.plan.tasks[base + i];
      if (t.deps.empty()) t.deps.insert(t.deps.end(), sinks.begin(), sinks.end());
    }
    sinks.clear();
    if (j.kind == JobKind::traffic && r + 1 == j.repeat)
      out.plan.tasks[base].duration = Time::zero();  // the job ends with its last sends, not a wait
    if (j.kind == JobKind::traffic) {
      sinks.push_back(base);  // the next period starts when this one's wait ends
    } else {
      for (std::size_t i = 0; i < one.tasks.size(); ++i)
        if (!has_dependent[i]) sinks.push_back(base + i);
    }
  }
  return out;
}

}  // namespace

Workload load_workload(const JsonCursor& root) {
  const std::string& file = root.file();
  if (!root.is_object()) root.fail("a workload is a JSON object");
  root.require_format(kFormat);
  root.allow_only({"format", "name", "description", "topology", "jobs"});
  Workload w;
  w.name = root["name"].as_name();
  if (auto d = root.find("description")) w.description = d->as_string();
  w.topology = root["topology"].as_name();
  if (w.topology.ends_with(".json")) w.topology = resolve_beside(file, w.topology);
  const JsonCursor jobs = root["jobs"];
  const std::size_t n = jobs.size_at_most(kMaxWorkloadJobs, "jobs");
  if (n == 0) jobs.fail("a workload needs at least one job");
  jobs.require_unique("name");
  for (std::size_t i = 0; i < n; ++i) w.jobs.push_back(job_from_json(jobs.at(i), file));
  return w;
}

WorkloadRun run_workload(const Workload& w, topology::Topology& topo,
                         const std::function<model::Model(const std::string&)>& load_model,
                         const sim::SimOptions& opts,
                         const std::function<void(std::size_t, std::size_t)>& progress) {
  topo.restore_host_order();
  std::vector<int> free(static_cast<std::size_t>(topo.host_count()));
  for (int h = 0; h < topo.host_count(); ++h) free[static_cast<std::size_t>(h)] = h;
  WorkloadRun run;
  std::vector<JobPlan> plans;
  for (const WorkloadJob& j : w.jobs) {
    JobOutcome o{j.name, j.kind, allocate(j, free, topo.host_count()), j.start, {}, {}};
    plan::Plan one;
    switch (j.kind) {
      case JobKind::collective: one = collective_plan(j, gpu_names(topo, o.hosts)); break;
      case JobKind::traffic: one = traffic_plan(j, topo, o.hosts); break;
      case JobKind::plan:
        one = plan_on_hosts(plan::load_plan_file(j.plan_file), topo, o.hosts, j.name);
        break;
      case JobKind::pipeline: {
        const int per_host = static_cast<int>(topo.host_gpus(o.hosts.front()).size());
        if (j.config.gpus() != j.hosts * per_host)
          throw UsageError(fmt::format("job \"{}\": its layout takes {} GPUs; its {} hosts have {}", j.name,
                                       j.config.gpus(), j.hosts, j.hosts * per_host));
        const model::Model m = load_model(j.model);
        topology::place(topo, topology::Placement{topology::PlacementKind::hosts, 1, o.hosts}, j.hosts);
        const RestoreHostOrder restore{topo};
        try {
          one = pipeline::build_pipeline(m, topo, j.config, opts.device_models).plan;
        } catch (const UsageError& e) {
          throw UsageError(fmt::format("job \"{}\": {}", j.name, e.what()));
        }
        break;
      }
    }
    plans.push_back(job_plan(j, one));
    run.jobs.push_back(std::move(o));
  }
  // Each job's span in a simulated plan: from its start to its last task's end.
  auto span = [](const sim::SimResult& r, std::size_t from, std::size_t to, Time start) {
    Time end = start;
    for (std::size_t i = from; i < to; ++i) end = std::max(end, r.tasks[i].end);
    return end - start;
  };
  const std::size_t steps = w.jobs.size() + 1;
  run.plan.name = w.name;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    plan::Plan alone;
    alone.name = fmt::format("{} (job {} alone)", w.name, w.jobs[k].name);
    append(alone, plans[k].plan, "");
    run.jobs[k].alone = span(sim::simulate(alone, topo, opts), 0, alone.tasks.size(), w.jobs[k].start);
    (void)append(run.plan, plans[k].plan, w.jobs[k].name + "/");
    run.job_of.resize(run.plan.tasks.size(), static_cast<int>(k));
    if (progress) progress(k + 1, steps);
  }
  run.together = sim::simulate(run.plan, topo, opts);
  std::size_t from = 0;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const std::size_t to = from + plans[k].plan.tasks.size();
    run.jobs[k].together = span(run.together, from, to, w.jobs[k].start);
    from = to;
  }
  if (progress) progress(steps, steps);
  return run;
}

}  // namespace meshsim::studies
