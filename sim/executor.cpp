#include "sim/executor.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/flat_lists.h"
#include "core/hash.h"
#include "core/memory_limit.h"
#include "core/unit_strings.h"
#include "hardware/gpus.h"
#include "sim/collective_flows.h"
#include "sim/compute_model.h"
#include "sim/kernel/engine.h"
#include "sim/kernel/slots.h"
#include "sim/period_skip.h"
#include "sim/plan_devices.h"
#include "sim/ring_order.h"

namespace meshsim::sim {

using plan::Plan;
using plan::Task;
using plan::TaskKind;

namespace {

using topology::NodeId;

// Chunk-by-chunk broadcasts start one flow per chunk and hop.
constexpr std::int64_t kMaxChunkFlows = std::int64_t{1} << 22;

// What a collective task puts on the network, before any of it starts.
struct CollectiveShape {
  CollectiveChoice choice;
  Time latency;
  std::vector<LockstepFlow> flows;  // shared link included
  std::vector<std::vector<std::vector<topology::DirLinkId>>>
      routed;  // adaptive: per flow, its members' paths
};

// A flow's links (the shared link included) and the latency before it
// moves bytes. Plans repeat the same transfers thousands of times: each
// is worked out once.
struct FixedPath {
  std::vector<topology::DirLinkId> links;
  Time latency;
  std::vector<double> weights;  // empty: all 1
};

}  // namespace

struct RunCache::Maps {
  // What they were filled under.
  const topology::Topology* topo = nullptr;
  topology::RoutingPolicy policy{};
  std::optional<topology::DirLinkId> shared_link;
  // By (op, size, forced choices, group).
  std::unordered_map<std::vector<std::int64_t>, CollectiveShape, WordsHash> shapes;
  std::unordered_map<std::vector<std::int64_t>, FixedPath, WordsHash> fluid;  // by (piece, chain)
  std::unordered_map<std::uint64_t, FixedPath> sends;                         // by (src << 32 | dst)
  double direct_flows_held = 0;  // flows of the direct collectives' kept shapes

  // Ready for a run over `t` with `p` and `shared`: emptied when they
  // differ from before, when the shapes have reached kMaxShapes, and when
  // they hold a direct collective's (whose flows each run counts against
  // the memory limit as its own). Between runs only: a run keeps pointers
  // into the maps.
  Maps& fit(const topology::Topology& t, topology::RoutingPolicy p,
            std::optional<topology::DirLinkId> shared) {
    if (topo != &t || policy != p || shared_link != shared || shapes.size() >= kMaxShapes ||
        direct_flows_held > 0) {
      shapes.clear();
      fluid.clear();
      sends.clear();
      direct_flows_held = 0;
      topo = &t;
      policy = p;
      shared_link = shared;
    }
    return *this;
  }
};

RunCache::RunCache() : maps_(std::make_unique<Maps>()) {}
RunCache::~RunCache() = default;
std::size_t RunCache::shapes() const {
  return maps_->shapes.size();
}

namespace {

class Run final : public FlowClient, public kernel::EventHandler, public SkippableRun {
 public:
  Run(const Plan& plan, const plan::Schedule& schedule, const topology::Topology& topo,
      const std::vector<NodeId>& node_of, const SimOptions& opts)
      : plan_(plan),
        schedule_(schedule),
        topo_(topo),
        net_(engine_, topo),
        opts_(opts),
        router_(topo, opts.routing.value_or(topo.routing)) {
    net_.record_timeline(opts.record_link_timeline);
    net_.check_rates(opts.check_rates);
    const std::size_t n = plan.tasks.size();
    result_.tasks.resize(n);
    result_.task_device.resize(n);
    result_.collectives.resize(n);
    result_.compute_busy.assign(topo.node_count(), Time::zero());
    result_.comm_busy.assign(topo.node_count(), Time::zero());
    preds_left_.resize(n);
    kind_.resize(n);
    fixed_time_.assign(n, Time::zero());
    devices_.reserve(n, 2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      const Task& t = plan.tasks[i];
      for (std::size_t d : t.devices) devices_.add(node_of[d]);
      devices_.close();
      result_.task_device[i] = devices_[i].front();
      preds_left_[i] = schedule.preds[i].size();
      kind_[i] = t.kind;
      naming_task(i, [&] {
        fixed_time_[i] = fixed_time(i);
        prepare(i);
      });
    }
  }

  SimResult run() {
    for (std::size_t i = 0; i < plan_.tasks.size(); ++i)
      if (preds_left_[i] == 0) start_task(i);
    if (skipping_)
      run_skipping();
    else
      engine_.run();
    for (std::size_t i = 0; i < plan_.tasks.size(); ++i)
      MESHSIM_ASSERT(finished_[i], fmt::format("task \"{}\" never ran", plan_.tasks[i].id));
    net_.settle();
    result_.link_bytes = net_.link_bytes();
    result_.link_capacity.resize(result_.link_bytes.size());
    for (topology::DirLinkId l = 0; l < result_.link_capacity.size(); ++l)
      result_.link_capacity[l] = net_.link_capacity(l);
    if (net_.timeline().size() == result_.link_bytes.size()) result_.link_timeline = net_.timeline();
    result_.events = engine_.events_processed();
    result_.replayed_tasks = skip_.replayed();
    plan::Timeline tl = plan::make_timeline(schedule_, std::move(result_.tasks));
    result_.tasks = std::move(tl.tasks);
    result_.makespan = tl.makespan;
    result_.critical_path = std::move(tl.critical_path);
    return std::move(result_);
  }

 private:
  // Runs instant by instant; at each quiet one (no flow, only task ends
  // pending) PeriodSkip may replay what repeats, and the clock jumps past it.
  void run_skipping() {
    std::vector<kernel::Engine::Pending> pending;
    std::vector<PeriodSkip::End> ends;
    while (engine_.run_instant()) {
      if (net_.active_flows() != 0 || engine_.events_pending() != task_events_pending_) continue;
      if (skip_.gave_up()) {
        engine_.run();
        return;
      }
      engine_.pending(pending);
      ends.clear();
      for (const auto& e : pending) ends.push_back({e.at, e.payload});
      const auto jump = skip_.quiet(engine_.now(), ends, engine_.events_processed(), net_.done_bytes());
      if (!jump) continue;
      engine_.jump(jump->time, jump->events,
                   [&](kernel::EventHandler*, std::uint32_t task) { return task_event(task + jump->tasks); });
      net_.repeat_done_bytes(*jump->bytes_at_start, jump->windows);
    }
  }

  void start_task(std::size_t i) {
    result_.tasks[i].start = engine_.now();
    started_[i] = true;
    if (skipping_) skip_.started(i);
    naming_task(i, [&] { start(i); });
  }

  // Runs `work` for task i; a time past the clock's range names the task
  // (and the plan) it came from.
  template <typename Work>
  void naming_task(std::size_t i, Work work) {
    try {
      work();
    } catch (const kernel::ClockOverflow& e) {
      throw UsageError(
          fmt::format("{}: task \"{}\": {}", plan::plan_origin(plan_), plan_.tasks[i].id, e.what()));
    }
  }

  void finish(std::size_t i) {
    result_.tasks[i].end = engine_.now();
    finished_[i] = true;
    if (skipping_) skip_.finished(i);
    count_busy(i);
    for (std::size_t d : schedule_.succs[i])
      if (--preds_left_[d] == 0) start_task(d);
  }

  // Task i's time on its devices, as compute or communication.
  void count_busy(std::size_t i) {
    const Time took = result_.tasks[i].end - result_.tasks[i].start;
    for (NodeId dev : devices_[i])
      (kind_[i] == TaskKind::compute ? result_.compute_busy : result_.comm_busy)[dev] += took;
  }

  // SkippableRun: the work a task does once started is fixed by these.
  [[nodiscard]] bool same_work(std::size_t a, std::size_t b) const override {
    const auto da = devices_[a];
    const auto db = devices_[b];
    return kind_[a] == kind_[b] && fixed_time_[a] == fixed_time_[b] && size_[a] == size_[b] &&
           path_[a] == path_[b] && shape_[a] == shape_[b] &&
           std::equal(da.begin(), da.end(), db.begin(), db.end()) &&
           (kind_[a] != TaskKind::broadcast || plan_.tasks[a].chunk == plan_.tasks[b].chunk);
  }
  void replay_start(std::size_t task, std::size_t like, Time at) override {
    result_.tasks[task].start = at;
    started_[task] = true;
    result_.collectives[task] = result_.collectives[like];
  }
  void replay_finish(std::size_t task, Time at) override {
    result_.tasks[task].end = at;
    finished_[task] = true;
    count_busy(task);
  }

  // The route's links, plus the shared link when the options name one.
  std::vector<topology::DirLinkId> path_of(const topology::Route& r) const {
    auto p = r.links();
    if (opts_.shared_link) p.push_back(*opts_.shared_link);
    return p;
  }

  // The time of a task that runs on its devices alone: a compute task (the
  // device model's, unless the plan fixes it; on several devices, the
  // slowest one's, as they run in lockstep) or a local copy (reading and
  // writing `size` under the memory roofline). Zero for the others.
  Time fixed_time(std::size_t i) {
    const Task& t = plan_.tasks[i];
    const bool local_copy = t.kind == TaskKind::send && t.devices[0] == t.devices[1];
    if (t.kind != TaskKind::compute && !local_copy) return Time::zero();
    if (t.duration) return *t.duration;
    Time longest = Time::zero();
    const std::size_t devices = local_copy ? 1 : devices_[i].size();  // a copy names its device twice
    const DeviceModel* timed = nullptr;  // the last model timed (the devices of a task are mostly alike)
    for (std::size_t k = 0; k < devices; ++k) {
      const DeviceModel* dm = model_of_node(devices_[i][k]);
      if (dm != nullptr && dm == timed) continue;
      timed = dm;
      if (dm == nullptr)
        throw UsageError(fmt::format(
            "task \"{}\": no compute model for GPU model \"{}\" of {} (known: {}); {}", t.id,
            topo_.node(devices_[i][k]).model, plan_.devices[t.devices[k]], hardware::modelled_gpu_names(),
            local_copy ? "a local copy needs the GPU's memory bandwidth" : "give the task a \"duration\""));
      longest = std::max(longest, local_copy  ? dm->kernel_time(0, t.size * 2, plan::DType::u8)
                                  : t.kernels ? kernels_time(*t.kernels, dm)
                                              : dm->kernel_time(t.flops, t.mem_bytes, t.dtype));
    }
    return longest;
  }

  // A kernel set's time on a device model, worked out once per run.
  Time kernels_time(std::size_t set, const DeviceModel* dm) {
    if (set_time_.size() <= set) set_time_.resize(plan_.kernel_sets.size());
    for (const auto& [model, time] : set_time_[set])
      if (model == dm) return time;
    const Time t = dm->kernels_time(plan_.kernel_sets[set].kernels);
    set_time_[set].emplace_back(dm, t);
    return t;
  }

  const DeviceModel* model_of_node(NodeId n) {
    if (node_model_.size() <= n) node_model_.resize(n + 1, {false, nullptr});
    auto& [known, model] = node_model_[n];
    if (!known) model = find_device_model(topo_.node(n).model, opts_.device_models);
    known = true;
    return model;
  }

  // What starting task i needs, worked out while the constructor reads the
  // task anyway: its size and its flows' path or shape (shared by every
  // task that repeats the transfer).
  void prepare(std::size_t i) {
    const Task& t = plan_.tasks[i];
    size_[i] = t.size;
    const auto d = devices_[i];
    if (t.kind == TaskKind::send && d[0] != d[1]) path_[i] = &send_path(d[0], d[1]);
    if (t.kind == TaskKind::broadcast && opts_.fluid_broadcast) path_[i] = &fluid_chain(t, i);
    if (t.kind == TaskKind::collective && router_.policy() != topology::RoutingPolicy::adaptive)
      shape_[i] = &cached_shape(t, i);
  }

  // The hot path touches small arrays, not whole tasks: compute times,
  // paths and shapes were worked out up front.
  void start(std::size_t i) {
    const auto dev = devices_[i];
    switch (kind_[i]) {
      case TaskKind::compute: end_at(engine_.after(fixed_time_[i]), i); break;
      case TaskKind::send: {
        if (dev[0] == dev[1]) {
          end_at(engine_.after(fixed_time_[i]), i);
          break;
        }
        net_.start(path_[i]->links, path_[i]->latency, size_[i], {this, tag(kTaskFlow, i, 0)});
        break;
      }
      case TaskKind::broadcast: start_broadcast(i); break;
      case TaskKind::collective: start_collective(i); break;
    }
  }

  void start_collective(std::size_t i) {
    const bool adaptive = router_.policy() == topology::RoutingPolicy::adaptive;
    // Pipelines repeat the same collective on the same group thousands of
    // times: its ring order, selection and flows are worked out once.
    // Adaptive routing picks paths by the load of the moment, so it does not.
    CollectiveShape fresh;
    if (adaptive) fresh = shape_of(plan_.tasks[i], i);
    const CollectiveShape& shape = adaptive ? fresh : *shape_[i];
    result_.collectives[i] = shape.choice;
    if (shape.flows.empty()) {
      end_at(engine_.after(shape.latency), i);
      return;
    }
    flows_left_[i] = static_cast<std::uint32_t>(shape.flows.size());
    if (adaptive) routed_[i] = std::move(fresh.routed);  // path k is released when flow k is done
    for (std::size_t k = 0; k < shape.flows.size(); ++k) {
      const auto& lf = shape.flows[k];
      net_.start(lf.path, shape.latency, lf.size, {this, tag(kCollectiveFlow, i, k)}, std::nullopt,
                 lf.weights);
    }
  }

  void collective_flow_done(std::size_t i, std::size_t k) {
    if (auto it = routed_.find(i); it != routed_.end()) {
      for (const auto& p : it->second[k]) router_.release(p);
      if (flows_left_[i] == 1) routed_.erase(it);
    }
    if (--flows_left_[i] > 0) return;
    finish(i);
  }

  const CollectiveShape& cached_shape(const Task& t, std::size_t i) {
    key_.assign({static_cast<std::int64_t>(t.op), t.size.count(),
                 t.algorithm ? static_cast<int>(*t.algorithm) : -1,
                 t.protocol ? static_cast<int>(*t.protocol) : -1, t.channels, t.listed_order});
    for (NodeId n : devices_[i]) key_.push_back(static_cast<std::int64_t>(n));
    auto it = cache_.shapes.find(key_);
    if (it == cache_.shapes.end()) it = cache_.shapes.emplace(key_, shape_of(t, i)).first;
    return it->second;
  }

  CollectiveShape shape_of(const Task& t, std::size_t i) {
    const std::vector<NodeId> g(devices_[i].begin(), devices_[i].end());
    const std::vector<NodeId> group = t.listed_order ? g : ring_order(topo_, g);
    CollectiveShape shape;
    shape.choice = choose_collective(topo_, group, t.size, {t.op, t.algorithm, t.protocol, t.channels});
    if (shape.choice.algorithm == plan::Algorithm::direct) require_direct_flows(t, group.size());
    auto traffic = collective_traffic(topo_, group, t.op, t.size, shape.choice, router_);
    shape.latency = traffic.latency;
    shape.flows = lockstep_flows(traffic);
    for (auto& lf : shape.flows) {
      if (opts_.shared_link) {
        // Every member is a copy through the one memory: the link carries
        // all their bytes, not only the largest member's.
        double bytes = 0;
        for (std::size_t m : lf.members) bytes += static_cast<double>(traffic.flows[m].bytes.count());
        lf.path.push_back(*opts_.shared_link);
        lf.weights.push_back(std::max(bytes, 1.0) / std::max(1.0, static_cast<double>(lf.size.count())));
      }
      if (router_.policy() != topology::RoutingPolicy::adaptive) continue;
      shape.routed.emplace_back();
      for (std::size_t m : lf.members) shape.routed.back().push_back(std::move(traffic.flows[m].path));
    }
    return shape;
  }

  // A direct collective starts a flow per ordered pair of its GPUs: their
  // memory is estimated before they are made, with that of the direct
  // collectives whose flows the run keeps (one shape per distinct one;
  // under adaptive routing, one at a time).
  void require_direct_flows(const Task& t, std::size_t gpus) {
    const double flows = static_cast<double>(gpus) * static_cast<double>(gpus - 1);
    const bool kept = router_.policy() != topology::RoutingPolicy::adaptive;
    const double held = kept ? cache_.direct_flows_held + flows : flows;
    require_memory(
        held * kBytesPerDirectFlow,
        fmt::format("task \"{}\": a direct {} over {} GPUs ({:.0f} flows{})", t.id, plan::to_string(t.op),
                    gpus, flows,
                    held > flows ? fmt::format(", {:.0f} with the plan's other direct collectives", held)
                                 : std::string()),
        "fewer GPUs in each all-to-all, or fewer distinct ones in the plan");
    if (kept) cache_.direct_flows_held = held;
  }

  // Chunk-pipelined chain; see the header for the timing model.
  struct Chain {
    std::size_t task = 0;
    std::int64_t chunks = 0;
    std::vector<std::int64_t> held;  // chunks held by chain position p (root: all)
    std::vector<std::int64_t> sent;  // chunks hop p (p → p+1) has sent
    std::vector<bool> busy;          // hop p is transmitting
    std::vector<std::vector<topology::DirLinkId>> path;
    std::vector<Time> latency;
  };

  void start_broadcast(std::size_t i) {
    const Task& t = plan_.tasks[i];
    const auto d = devices_[i];
    if (opts_.fluid_broadcast) {
      net_.start(path_[i]->links, path_[i]->latency, size_[i], {this, tag(kTaskFlow, i, 0)}, std::nullopt,
                 path_[i]->weights);
      return;
    }
    auto c = std::make_shared<Chain>();
    chains_[i] = c;
    c->task = i;
    c->chunks = (t.size.count() + t.chunk.count() - 1) / t.chunk.count();
    const std::size_t hops = d.size() - 1;
    if (c->chunks > kMaxChunkFlows / static_cast<std::int64_t>(hops))
      throw UsageError(fmt::format(
          "broadcast \"{}\" of {} in {} chunks over {} hops is {} chunk transfers, more than the {} "
          "the simulator times one by one: give it a larger \"chunk\"",
          t.id, human_string(t.size), c->chunks, hops,
          static_cast<double>(c->chunks) * static_cast<double>(hops), kMaxChunkFlows));
    c->held.assign(d.size(), 0);
    c->held[0] = c->chunks;
    c->sent.assign(hops, 0);
    c->busy.assign(hops, false);
    for (std::size_t p = 0; p < hops; ++p) {
      const auto& r = topo_.route(d[p], d[p + 1]);
      c->path.push_back(path_of(r));
      c->latency.push_back(r.latency);
    }
    for (std::size_t p = 0; p < hops; ++p) pump(c, p);
  }

  // A send between two GPUs: its route.
  const FixedPath& send_path(NodeId src, NodeId dst) {
    const std::uint64_t key = (std::uint64_t{src} << 32) | dst;
    if (auto it = cache_.sends.find(key); it != cache_.sends.end()) return it->second;
    const auto& r = topo_.route(src, dst);
    return cache_.sends.emplace(key, FixedPath{path_of(r), r.latency, {}}).first->second;
  }

  // A fluid broadcast: one flow over every hop of the chain, which starts
  // after each hop's latency and each later hop's first piece.
  const FixedPath& fluid_chain(const Task& t, std::size_t i) {
    const Bytes piece = std::min(t.chunk, t.size);
    key_.assign({piece.count()});
    for (NodeId n : devices_[i]) key_.push_back(static_cast<std::int64_t>(n));
    if (auto it = cache_.fluid.find(key_); it != cache_.fluid.end()) return it->second;
    FixedPath c;
    const auto d = devices_[i];
    for (std::size_t p = 0; p + 1 < d.size(); ++p) {
      const auto& r = topo_.route(d[p], d[p + 1]);
      const auto links = r.links();
      c.links.insert(c.links.end(), links.begin(), links.end());
      c.latency += r.latency;
      if (p > 0 && !r.hops.empty()) c.latency += piece / r.bottleneck;
    }
    if (opts_.shared_link) {
      // Each hop copies the data through the one memory once.
      c.weights.assign(c.links.size(), 1.0);
      c.links.push_back(*opts_.shared_link);
      c.weights.push_back(static_cast<double>(d.size() - 1));
    }
    return cache_.fluid.emplace(key_, std::move(c)).first->second;
  }

  void pump(const std::shared_ptr<Chain>& c, std::size_t p) {
    if (c->busy[p] || c->sent[p] >= c->held[p] || c->sent[p] >= c->chunks) return;
    const Task& t = plan_.tasks[c->task];
    const std::int64_t j = c->sent[p]++;
    const Bytes bytes = j + 1 < c->chunks ? t.chunk : t.size - t.chunk * (c->chunks - 1);
    c->busy[p] = true;
    net_.start(c->path[p], Time::zero(), bytes, {this, tag(kChunkFlow, c->task, p)});
  }

  void chunk_done(std::size_t task, std::size_t p) {
    const std::shared_ptr<Chain> c = chains_.at(task);
    c->busy[p] = false;
    pump(c, p);
    // The chunk lands one hop latency after its last byte left: an event
    // whose payload is the landing's slot.
    const std::uint32_t slot =
        kernel::take_slot(landings_, free_landings_, kLanding, "more than 2^31 broadcast chunks in flight");
    landings_[slot] = {c, p};
    engine_.schedule(engine_.after(c->latency[p]), this, kLanding | slot);
  }

  void chunk_landed(std::uint32_t slot) {
    const auto [c, p] = std::move(landings_[slot]);
    free_landings_.push_back(slot);
    ++c->held[p + 1];
    if (p + 1 < c->sent.size()) pump(c, p + 1);
    if (p + 1 == c->sent.size() && c->held[p + 1] == c->chunks) {
      chains_.erase(c->task);
      finish(c->task);
    }
  }

  // A flow's tag: what it belongs to (kind), its task and its index there.
  enum FlowKind : std::uint64_t { kTaskFlow = 0, kCollectiveFlow = 1, kChunkFlow = 2 };
  static std::uint64_t tag(FlowKind kind, std::size_t task, std::size_t sub) {
    MESHSIM_ASSERT(task < (std::uint64_t{1} << 38) && sub < (std::uint64_t{1} << 24), "flow tag overflow");
    return (static_cast<std::uint64_t>(kind) << 62) | (static_cast<std::uint64_t>(task) << 24) | sub;
  }

  // Events: a task that ends at a known time has its index as payload; a
  // broadcast chunk's landing, kLanding | its slot in landings_.
  static constexpr std::uint32_t kLanding = std::uint32_t{1} << 31;
  static std::uint32_t task_event(std::size_t i) {
    MESHSIM_ASSERT(i < kLanding, "task index overflows an event payload");
    return static_cast<std::uint32_t>(i);
  }
  // Task i ends at `at`, whatever else happens.
  void end_at(Time at, std::size_t i) {
    engine_.schedule(at, this, task_event(i));
    ++task_events_pending_;
  }

  void on_event(Time /*now*/, std::uint32_t payload) override {
    if ((payload & kLanding) != 0) {
      chunk_landed(payload & ~kLanding);
      return;
    }
    --task_events_pending_;
    finish(payload);
  }

  void flow_done(FlowId /*f*/, std::uint64_t t, Time /*now*/) override {
    const std::size_t task = (t >> 24) & ((std::uint64_t{1} << 38) - 1);
    const std::size_t sub = t & ((std::uint64_t{1} << 24) - 1);
    switch (static_cast<FlowKind>(t >> 62)) {
      case kTaskFlow: finish(task); break;
      case kCollectiveFlow: collective_flow_done(task, sub); break;
      case kChunkFlow: chunk_done(task, sub); break;
    }
  }

  const Plan& plan_;
  const plan::Schedule& schedule_;
  const topology::Topology& topo_;
  kernel::Engine engine_;
  FlowNetwork net_;
  const SimOptions& opts_;
  SimResult result_;
  FlatLists<NodeId> devices_;  // per task, its devices as topology nodes
  std::vector<TaskKind> kind_;
  std::vector<Time> fixed_time_;                                 // compute tasks and local copies: their time
  std::vector<std::pair<bool, const DeviceModel*>> node_model_;  // by node, once looked up
  std::vector<std::vector<std::pair<const DeviceModel*, Time>>> set_time_;  // by kernel set
  std::vector<std::size_t> preds_left_;
  Router router_;
  RunCache own_cache_;  // unless the options share one
  RunCache::Maps& cache_ = (opts_.cache != nullptr ? *opts_.cache : own_cache_)
                               .maps()
                               .fit(topo_, router_.policy(), opts_.shared_link);
  // Per task, from prepare(): its size, and the path or shape it starts
  // (pointers into cache_'s maps, whose nodes do not move during a run).
  std::vector<Bytes> size_ = std::vector<Bytes>(plan_.tasks.size());
  std::vector<const FixedPath*> path_ = std::vector<const FixedPath*>(plan_.tasks.size(), nullptr);
  std::vector<const CollectiveShape*> shape_ =
      std::vector<const CollectiveShape*>(plan_.tasks.size(), nullptr);
  std::vector<std::int64_t> key_;  // scratch: a key into cache_.shapes or cache_.fluid
  std::vector<std::uint32_t> flows_left_ =
      std::vector<std::uint32_t>(plan_.tasks.size(), 0);  // per collective
  // Adaptive routing: per collective in flight, per flow, its members' paths.
  std::map<std::size_t, std::vector<std::vector<std::vector<topology::DirLinkId>>>> routed_;
  std::map<std::size_t, std::shared_ptr<Chain>> chains_;  // chunked broadcasts in flight, by task
  struct Landing {
    std::shared_ptr<Chain> chain;
    std::size_t hop = 0;  // the chunk lands at chain position hop + 1
  };
  std::vector<Landing> landings_;  // chunks sent, not yet landed; free slots in free_landings_
  std::vector<std::uint32_t> free_landings_;
  std::vector<bool> started_ = std::vector<bool>(plan_.tasks.size(), false);
  std::vector<bool> finished_ = std::vector<bool>(plan_.tasks.size(), false);
  std::size_t task_events_pending_ = 0;  // task_event()s in the engine's queue
  const bool skipping_ = opts_.skip_periods && !opts_.record_link_timeline && !opts_.check_rates &&
                         router_.policy() != topology::RoutingPolicy::adaptive;
  PeriodSkip skip_{{schedule_.succs, preds_left_, result_.tasks, started_, finished_}, *this};
};

}  // namespace

plan::Timeline SimResult::timeline() const {
  return {tasks, makespan, critical_path};
}

std::vector<LinkLoad> SimResult::bottlenecks(std::size_t k) const {
  std::vector<LinkLoad> all;
  const double span = makespan.seconds();
  for (topology::DirLinkId l = 0; l < link_bytes.size(); ++l)
    if (link_bytes[l] > 0)
      all.push_back({l, link_bytes[l], span > 0 ? link_bytes[l] / (link_capacity[l] * span) : 0.0});
  std::stable_sort(all.begin(), all.end(), [](const LinkLoad& a, const LinkLoad& b) {
    if (a.utilisation != b.utilisation) return a.utilisation > b.utilisation;
    return a.bytes > b.bytes;
  });
  if (all.size() > k) all.resize(k);
  return all;
}

SimResult simulate(const Plan& plan, const topology::Topology& topo, const SimOptions& opts) {
  return simulate(plan, plan::make_schedule(plan, plan::plan_origin(plan)), topo, opts);
}

SimResult simulate(const Plan& plan, const plan::Schedule& schedule, const topology::Topology& topo,
                   const SimOptions& opts) {
  plan::check_payload_indices(plan);  // (making the schedule checked the device and dependency lists)
  const std::vector<NodeId> node_of = plan_nodes(plan, topo, plan::plan_origin(plan));
  return Run(plan, schedule, topo, node_of, opts).run();
}

std::function<Time(const Plan&, const Task&)> roofline_stand_in(const topology::Topology& topo,
                                                                const SimOptions& opts) {
  return [&topo, models = opts.device_models](const Plan& p, const Task& t) -> Time {
    if (t.duration) return *t.duration;
    const auto n = topo.find(p.devices.at(t.devices.at(0)));
    if (!n) return Time{};
    const DeviceModel* dm = find_device_model(topo.node(*n).model, models);
    if (dm == nullptr) return Time{};
    return t.kernels ? dm->kernels_time(p.kernel_sets[*t.kernels].kernels)
                     : dm->kernel_time(t.flops, t.mem_bytes, t.dtype);
  };
}

}  // namespace meshsim::sim
