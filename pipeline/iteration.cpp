#include "pipeline/iteration.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <utility>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "core/append_lists.h"
#include "core/error.h"
#include "hardware/gpus.h"
#include "pipeline/layout.h"
#include "pipeline/pass_kernels.h"
#include "plan/builder.h"
#include "sim/plan_devices.h"
#include "topology/mesh.h"

namespace meshsim::pipeline {

namespace {

using Kind = PipelineIteration::Kind;

// Adam with fp32 master weights: reads the fp16 gradient and the fp32
// master, m and v (14 bytes), writes master, m, v and the fp16 weights (14).
constexpr double kOptimizerBytesPerParam = 28;

constexpr int kComputeStream = 0;
constexpr plan::CollectiveOp kTensorParallelOps[] = {plan::CollectiveOp::all_reduce};
constexpr plan::CollectiveOp kSequenceParallelOps[] = {plan::CollectiveOp::all_gather,
                                                       plan::CollectiveOp::reduce_scatter};
constexpr int kForwardStream = 1;   // + s mod 2
constexpr int kBackwardStream = 3;  // + s mod 2
constexpr int kDataParallelStream = 5;
constexpr int kWeightGatherStream = 6;   // ZeRO-3's gathers, ahead of the passes
constexpr int kContextStream = 7;        // context parallelism's key/value exchanges, beside the passes
constexpr int kTensorOverlapStream = 8;  // tensor-parallel collectives beside the compute (tp_comm_overlap)
constexpr std::size_t kNone = SIZE_MAX;

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

// A transfer's plan and where its devices are in the pipeline plan.
struct Template {
  const TransferPlan* plan = nullptr;
  plan::Stamp stamp;
};

// Data replicas first, first + stride, ... (count of them; 0: every one).
struct Replicas {
  int first = 0;
  int stride = 1;
  int count = 0;
  [[nodiscard]] int replica(int k) const { return first + k * stride; }
};

// Emits the iteration's tasks into it.plan; pipeline_plan.h has the model.
class PipelineBuilder {
 public:
  PipelineBuilder(const model::Model& model, const topology::Topology& topo, const PipelineConfig& cfg,
                  const PipelineRanks& ranks, PipelineIteration& it,
                  const std::vector<std::vector<PipelineOp>>& ops, TransferPlans* shared)
      : plans_(shared != nullptr ? *shared : own_plans_),
        model_(model),
        topo_(topo),
        cfg_(cfg),
        ranks_(ranks),
        it_(it),
        ops_(ops),
        replicas_(cfg.replicas()),
        device_(topo, it.plan),
        stages_(cfg.pp * cfg.virtual_stages),
        last_end_(at(cfg.pp) * at(cfg.replicas()), 0),
        incoming_(2 * at(stages_ * cfg.microbatches * cfg.replicas())),
        last_of_chunk_(at(cfg.pp), std::vector<std::size_t>(at(cfg.virtual_stages), 0)),
        templates_(2 * it.transfers.size() * at(cfg.replicas())),
        buckets_(at(stages_)),
        bucket_computes_(at(cfg.replicas())),
        first_of_chunk_(at(cfg.pp), std::vector<std::size_t>(at(cfg.virtual_stages), kNone)),
        computes_before_(at(cfg.pp) * at(cfg.replicas()), {kNone, kNone}),
        sent_by_(2 * at(stages_)) {
    plans_.fit(topo);
    for (std::size_t x = 0; x < it.transfers.size(); ++x) {
      sent_by_[2 * at(it.transfers[x].src_stage)].push_back(x);
      sent_by_[2 * at(it.transfers[x].dst_stage) + 1].push_back(x);
    }
    for (int p = 0; p < cfg.pp; ++p)
      for (std::size_t k = 0; k < ops[at(p)].size(); ++k)
        if (ops[at(p)][k].pass != Pass::forward)
          last_of_chunk_[at(p)][at(ops[at(p)][k].chunk)] = k;
        else if (first_of_chunk_[at(p)][at(ops[at(p)][k].chunk)] == kNone)
          first_of_chunk_[at(p)][at(ops[at(p)][k].chunk)] = k;
  }

  void emit(const ScheduleTimeline& ideal) {
    std::size_t passes = 0;
    for (const auto& device : ops_) passes += device.size();
    // A pass is a compute task, its all-reduce and about one transfer.
    it_.plan.tasks.reserve(3 * passes * at(replicas_) + at(cfg_.pp * replicas_ * cfg_.tp));
    it_.task_kind.reserve(it_.plan.tasks.capacity());
    emit_param_gathers();
    if (cfg_.overlap)
      emit_overlapping(ideal);
    else
      emit_blocking();
    emit_optimizer();
    it_.plan.tasks.resize(used_);
  }

 private:
  // Passes in the order of the ideal play, each with its transfers.
  void emit_overlapping(const ScheduleTimeline& ideal) {
    std::vector<std::size_t> computes(at(replicas_));
    for (const PassEvent& ev : play_order(ops_, ideal)) {
      const PipelineOp& op = ops_[at(ev.device)][ev.index];
      gather_weights(op, ev.device);
      exchange_tokens(op, ev.device);
      exchange_context(op, ev.device);
      for (int d = 0; d < replicas_; ++d) computes[at(d)] = emit_pass(op, ev.device, d, ev.index);
      release_gradients(op, ev.index, ev.device, computes);
    }
  }

  // After the last backward of a chunk on a device (its replicas' compute
  // tasks `computes`), the chunk's data-parallel all-reduce.
  void release_gradients(const PipelineOp& op, std::size_t index, int device,
                         const std::vector<std::size_t>& computes) {
    if (last_of_chunk_[at(device)][at(op.chunk)] == index && op.pass != Pass::forward)
      emit_dp_allreduce(op.chunk * cfg_.pp + device, device, computes);
  }

  // A blank task in the plan's next slot. A slot left by an earlier plan
  // (build_pipeline_into) keeps the storage of its id and lists, so a
  // search building plan after plan allocates little: copying a blank
  // task over it empties its strings and lists in place, keeping their
  // capacity. The reference is good until the next call.
  plan::Task& next_task(Kind k) {
    static const plan::Task blank{};
    plan::Task& t = next_slot(k);
    t = blank;
    return t;
  }

  // The plan's next slot as an earlier plan left it, for a caller that
  // assigns a whole task over it.
  plan::Task& next_slot(Kind k) {
    auto& tasks = it_.plan.tasks;
    if (used_ >= plan::kMaxPlanTasks)
      throw UsageError(
          fmt::format("the iteration's plan grows past the {} tasks a plan may have: use fewer or "
                      "larger microbatches, or fewer virtual stages",
                      plan::kMaxPlanTasks));
    if (used_ == tasks.size()) tasks.emplace_back();
    it_.task_kind.push_back(k);
    return tasks[used_++];
  }

  // The pass (forward or backward, stage, microbatch, replica) waits for
  // the transfers that feed it: appended as they are emitted, read once.
  std::size_t pass_key(bool backward, int stage, int mb, int d) const {
    return at(((backward ? 1 : 0) * stages_ + stage) * cfg_.microbatches + mb) * at(replicas_) + at(d);
  }

  // The plan's kernel set of pass `pass` of virtual stage s (of its
  // gradient bucket `bucket`; -1: the whole stage) with its FLOPs and
  // bytes, made on first use; index nullopt when the model has no kernel
  // lists (pipeline_kernels.h).
  struct PassKernels {
    std::optional<std::size_t> index;
    double flops = 0;
    Bytes bytes;
  };
  const PassKernels& kernel_set(int s, Pass pass, int bucket) {
    const auto key = std::tuple{s, pass, bucket};
    if (auto found = kernel_sets_.find(key); found != kernel_sets_.end()) return found->second;
    PassKernels made;
    if (auto k = pass_kernels(model_, stage_part(s, bucket), pass, pass_options(cfg_))) {
      made = {it_.plan.kernel_sets.size(), k->flops(), k->bytes()};
      const char name = pass == Pass::forward ? 'F' : pass == Pass::backward ? 'B' : 'W';
      it_.plan.kernel_sets.push_back(
          {bucket < 0 ? fmt::format("s{}/{}", s, name) : fmt::format("s{}/{}/b{}", s, name, bucket),
           std::move(*k)});
    }
    return kernel_sets_[key] = made;
  }

  // Virtual stage s, or its gradient bucket `bucket` (>= 0).
  const VirtualStage& stage_part(int s, int bucket) {
    return bucket < 0 ? it_.stages[at(s)] : buckets_of(s)[at(bucket)];
  }

  // The gradient buckets of virtual stage s (grad_buckets), made on first use.
  const std::vector<VirtualStage>& buckets_of(int s) {
    auto& b = buckets_[at(s)];
    if (b.empty()) b = grad_buckets(model_, it_.stages[at(s)], cfg_);
    return b;
  }

  // The buckets pass `op` of stage s runs one by one, in the order it runs
  // them: the last backward of a chunk when its gradients are reduced bucket
  // by bucket (bucket 0 first), the first forward of a chunk when its
  // weights are gathered bucket by bucket (the last bucket, its first
  // layers, first). Empty: the pass is one compute task.
  std::vector<int> pass_buckets(const PipelineOp& op, int device, std::size_t index) {
    const int s = op.chunk * cfg_.pp + device;
    std::vector<int> order;
    if (replicas_ < 2) return order;
    const bool releases = op.pass != Pass::forward && last_of_chunk_[at(device)][at(op.chunk)] == index;
    const bool first = op.pass == Pass::forward && first_of_chunk_[at(device)][at(op.chunk)] == index;
    if ((releases && cfg_.overlap_grad_reduce) || (first && !param_gathers_.empty())) {
      const int n = static_cast<int>(buckets_of(s).size());
      for (int k = 0; k < n; ++k) order.push_back(first ? n - 1 - k : k);
    }
    return order;
  }

  // One compute task of pass `op` on replica d's tensor ranks (they run the
  // same kernels in lockstep: one task on all of them), over stage s or its
  // bucket. Returns its index.
  std::size_t emit_compute(const PipelineOp& op, int s, int device, int d, int bucket) {
    const std::size_t compute = used_;
    plan::Task& c = next_task(Kind::compute);
    c.id = prefix_;
    if (bucket >= 0) fmt::format_to(std::back_inserter(c.id), FMT_COMPILE("/b{}"), bucket);
    c.kind = plan::TaskKind::compute;
    for (int t = 0; t < cfg_.tp; ++t) c.devices.push_back(device_(ranks_.gpu(t, d, device)));
    c.stream = kComputeStream;
    const PassKernels& kernels = kernel_set(s, op.pass, bucket);
    c.kernels = kernels.index;
    if (kernels.index) {
      c.flops = kernels.flops;
      c.mem_bytes = kernels.bytes;
    } else {
      const PassCost cost = pass_cost(stage_part(s, bucket), op.pass, cfg_.microbatch_size, cfg_.tp,
                                      cfg_.schedule == model::Schedule::zb_h1, cfg_.full_recompute());
      c.flops = cost.flops;
      c.mem_bytes = cost.bytes;
    }
    c.dtype = model_.dtype;
    return compute;
  }

  // One pass of one data replica: the compute of its tensor ranks (one
  // task, or one per gradient bucket, pass_buckets), the tensor
  // all-reduce, and the transfers it starts. Returns its last compute task;
  // a pass run bucket by bucket leaves each bucket's in bucket_computes_[d].
  std::size_t emit_pass(const PipelineOp& op, int device, int d, std::size_t index) {
    const int s = op.chunk * cfg_.pp + device;
    const VirtualStage& vs = it_.stages[at(s)];
    const char pass_name = op.pass == Pass::forward ? 'F' : op.pass == Pass::backward ? 'B' : 'W';
    fmt::memory_buffer id;  // (formatting into a string would append char by char)
    fmt::format_to(std::back_inserter(id), FMT_COMPILE("{}{}/s{}/r{}"), pass_name, op.microbatch, s, d);
    prefix_.assign(id.data(), id.size());  // into the same storage pass after pass
    const std::vector<int> order = pass_buckets(op, device, index);
    // What the pass waits for: its inputs, its weights, its tokens.
    std::vector<std::size_t>& inputs = inputs_;
    inputs.clear();
    if (op.pass != Pass::weight)
      incoming_.read(pass_key(op.pass == Pass::backward, s, op.microbatch, d), inputs);
    inputs.insert(inputs.end(), pass_gathers_.begin(), pass_gathers_.end());
    if (!pass_exchanges_.empty())  // its group's all-to-all per tensor rank
      for (int t = 0; t < cfg_.tp; ++t) inputs.push_back(pass_exchanges_[at((d / cfg_.ep) * cfg_.tp + t)]);
    const std::size_t first = used_;
    std::size_t compute = kNone;
    auto& by_bucket = bucket_computes_[at(d)];
    by_bucket.assign(order.size(), kNone);
    for (std::size_t k = 0; k < std::max<std::size_t>(order.size(), 1); ++k) {
      const int bucket = order.empty() ? -1 : order[k];
      const std::size_t previous = compute;
      compute = emit_compute(op, s, device, d, bucket);
      plan::Task& c = it_.plan.tasks[compute];
      if (previous == kNone)
        c.deps = inputs;
      else
        c.deps.assign(1, previous);
      if (op.pass == Pass::forward && bucket >= 0 && !param_gathers_.empty()) {  // its weights' gathers
        const auto& g = param_gathers_[at(s)][at(bucket)];
        c.deps.insert(c.deps.end(), g.begin(), g.end());
      }
      if (bucket >= 0) by_bucket[at(bucket)] = compute;
    }
    auto& before = computes_before_[at(device) * at(replicas_) + at(d)];  // the last two passes' computes
    before = {before[1], compute};
    std::size_t end = compute;  // what the pass's transfers wait for
    // Its context group's key/value exchanges run beside the compute, and
    // with tensor-parallel overlap its collectives do: what follows the pass
    // waits for them.
    joins_.clear();
    if (!pass_contexts_.empty())
      for (int t = 0; t < cfg_.tp; ++t) joins_.push_back(pass_contexts_[at((d / cfg_.cp) * cfg_.tp + t)]);
    const double ar_bytes = cfg_.microbatch_size * vs.tp_allreduce_bytes *
                            (cfg_.full_recompute() && op.pass == Pass::backward ? 2 : 1);
    if (cfg_.tp > 1 && op.pass != Pass::weight && ar_bytes > 0) {
      // Sequence parallelism: an all-gather and a reduce-scatter of the same bytes in place of the
      // all-reduce.
      const auto tensor_rank = [&](int t) { return std::pair{t, d}; };
      const std::span<const plan::CollectiveOp> ops =
          cfg_.sequence_parallel ? std::span<const plan::CollectiveOp>(kSequenceParallelOps)
                                 : std::span<const plan::CollectiveOp>(kTensorParallelOps);
      for (plan::CollectiveOp cop : ops) {
        const std::size_t idx = used_;
        plan::Task& ar = next_task(Kind::tp_allreduce);
        name_.assign(prefix_).append(cop == plan::CollectiveOp::all_reduce   ? "/tp-allreduce"
                                     : cop == plan::CollectiveOp::all_gather ? "/tp-allgather"
                                                                             : "/tp-reducescatter");
        collective(ar, name_, cop, device, ar_bytes, tensor_rank, cfg_.tp);
        if (cfg_.tp_comm_overlap) {  // beside the compute, from its start
          ar.stream = kTensorOverlapStream;
          if (end == compute)
            ar.deps = it_.plan.tasks[first].deps;
          else
            ar.deps.assign(1, end);
        } else {
          ar.stream = kComputeStream;
          ar.deps.assign(1, end);
          if (end == compute) ar.deps.insert(ar.deps.end(), joins_.begin(), joins_.end());
        }
        end = idx;
      }
    }
    if (end != compute) {
      if (cfg_.tp_comm_overlap)
        joins_.push_back(compute);  // the collectives ran beside the compute
      else
        joins_.clear();  // the collectives waited for them
    }
    last_end_[at(device) * at(replicas_) + at(d)] = end;
    if (cfg_.overlap) send(op, s, d, end, -1, end);
    return compute;
  }

  // The transfers pass `op` of stage s (replica d; its last task `end`)
  // sends to stage `to` (all when negative): a forward sends each tensor
  // its stage produces; a backward returns the gradient of each tensor its
  // stage received. Their first tasks wait for `end` and `also`; their
  // sinks are left in sent_.
  void send(const PipelineOp& op, int s, int d, std::size_t end, int to_stage, std::size_t also) {
    sent_.clear();
    if (op.pass == Pass::weight) return;
    const bool backward = op.pass == Pass::backward;
    for (const std::size_t x : sent_by_[2 * at(s) + (backward ? 1 : 0)]) {
      const StageTransfer& tr = it_.transfers[x];
      const int to = backward ? tr.src_stage : tr.dst_stage;
      if (to_stage >= 0 && to != to_stage) continue;
      if (const Template* tpl = template_for(x, backward, d)) {
        fmt::memory_buffer id;  // (formatting into a string would append char by char)
        fmt::format_to(std::back_inserter(id), FMT_COMPILE("{}{}/s{}/r{}/to-s{}/l{}"),
                       op.pass == Pass::forward ? 'F' : 'B', op.microbatch, s, d, to, tr.layer);
        if (tr.side_output >= 0) fmt::format_to(std::back_inserter(id), FMT_COMPILE("s{}"), tr.side_output);
        name_.assign(id.data(), id.size());
        // Without overlap, on the compute stream of both ends, as NCCL calls issued there run.
        const int stream =
            cfg_.overlap ? (backward ? kBackwardStream : kForwardStream) + s % 2 : kComputeStream;
        const auto& out = stamp(*tpl, name_, stream, end, also);
        const std::size_t key = pass_key(backward, to, op.microbatch, d);
        for (std::size_t k : out) incoming_.append(key, k);
        sent_.insert(sent_.end(), out.begin(), out.end());
      }
    }
  }

  // Without overlap: passes and transfers in blocking_play's order; each
  // transfer starts after its pass and the pass before its reader, and its
  // sender's next pass waits for it.
  void emit_blocking() {
    std::vector<std::vector<int>> sends_to(at(stages_));
    for (const StageTransfer& tr : it_.transfers) {
      auto& to = sends_to[at(tr.src_stage)];
      if (std::find(to.begin(), to.end(), tr.dst_stage) == to.end()) to.push_back(tr.dst_stage);
    }
    std::vector<std::size_t> computes(at(replicas_));
    std::vector<std::vector<std::size_t>> held(at(cfg_.pp) *
                                               at(replicas_));  // a sender's transfers in flight
    std::vector<std::vector<std::size_t>> end_of(at(cfg_.pp) * at(replicas_));  // per pass, its last task
    for (const PlayStep& step : blocking_play(ops_, cfg_.pp, sends_to)) {
      const PipelineOp& op = ops_[at(step.device)][step.index];
      const int s = op.chunk * cfg_.pp + step.device;
      if (step.to < 0) {
        gather_weights(op, step.device);
        exchange_tokens(op, step.device);
      }
      for (int d = 0; d < replicas_; ++d) {
        const std::size_t slot = at(step.device) * at(replicas_) + at(d);
        if (step.to < 0) {
          const std::size_t first = used_;
          computes[at(d)] = emit_pass(op, step.device, d, step.index);
          auto& deps = it_.plan.tasks[first].deps;
          deps.insert(deps.end(), held[slot].begin(), held[slot].end());
          held[slot].clear();
          end_of[slot].push_back(last_end_[slot]);
          continue;
        }
        // The reader's device has played up to the pass before the reader.
        const std::size_t reader = at(step.to % cfg_.pp) * at(replicas_) + at(d);
        const std::size_t end = end_of[slot][step.index];
        send(op, s, d, end, step.to, end_of[reader].empty() ? end : last_end_[reader]);
        held[slot].insert(held[slot].end(), sent_.begin(), sent_.end());
      }
      if (step.to < 0) release_gradients(op, step.index, step.device, computes);
    }
  }

  // A collective `op` of `bytes` (nccl-tests' size: all-reduce the
  // buffer, all-gather its output, reduce-scatter its input) over `members`
  // GPUs of pipeline device `device`; member k is (tensor rank, replica) =
  // rank_of(k). With payloads, it carries what it moves (plan/builder.h).
  template <typename RankOf>
  void collective(plan::Task& c, const std::string& id, plan::CollectiveOp op, int device, double bytes,
                  RankOf rank_of, int members) {
    c.id = id;
    c.kind = plan::TaskKind::collective;
    c.op = op;
    for (int k = 0; k < members; ++k) {
      const auto [t, d] = rank_of(k);
      c.devices.push_back(device_(ranks_.gpu(t, d, device)));
    }
    c.size = checked_bytes(bytes, "a collective's buffer");
    c.dtype = model_.dtype;
    if (!cfg_.payloads) return;
    const std::int64_t elements = c.size.count() / plan::dtype_size(model_.dtype);
    if (op == plan::CollectiveOp::all_reduce)
      plan::add_sum_payload(it_.plan, c, id, model_.dtype, elements);
    else if (op == plan::CollectiveOp::all_to_all)
      plan::add_all_to_all_payload(it_.plan, c, id, model_.dtype, elements);
    else
      plan::add_sharded_payload(it_.plan, c, id, model_.dtype, elements);
  }

  // Gradients of virtual stage s are complete: each tensor rank's share of
  // the layers split by channels is all-reduced over the replicas (under
  // ZeRO, reduce-scattered, and the updated weights all-gathered after the
  // optimizer step: emit_weight_allgathers); the layers split by batch,
  // whole on every rank, are all-reduced over all tp·dp GPUs. When the
  // stage's last backward ran bucket by bucket, each bucket's reductions
  // wait for its own compute only.
  void emit_dp_allreduce(int s, int device, const std::vector<std::size_t>& computes) {
    const VirtualStage& vs = it_.stages[at(s)];
    const bool sharded = cfg_.zero != model::ZeroStage::none;
    const bool bucketed = !bucket_computes_[0].empty();
    const std::size_t parts = bucketed ? buckets_of(s).size() : 1;
    std::vector<std::size_t> done = computes;
    for (std::size_t k = 0; k < parts; ++k) {
      if (bucketed)
        for (int d = 0; d < replicas_; ++d) done[at(d)] = bucket_computes_[at(d)][k];
      const int bucket = bucketed ? static_cast<int>(k) : -1;
      for (const Share& sh : gradient_shares(bucketed ? buckets_of(s)[k] : vs)) {
        if (sh.replicas.count < 2 || sh.bytes <= 0) continue;
        for (int t = 0; t < cfg_.tp; ++t) {
          gradient_allreduce(share_name(sh, sharded ? "reducescatter" : "allreduce", s, t, bucket), device,
                             sh.bytes, done, t, 1,
                             sharded ? plan::CollectiveOp::reduce_scatter : plan::CollectiveOp::all_reduce,
                             sh.replicas, k + 1 == parts);
          if (sharded && param_gathers_.empty()) weight_allgathers_.push_back({s, device, t, bucket, sh});
        }
      }
    }
    if (vs.batch_param_bytes > 0)
      gradient_allreduce(fmt::format("batch-split-allreduce/s{}", s), device, vs.batch_param_bytes, computes,
                         0, cfg_.tp);
  }

  // What a tensor rank reduces of a stage's (or bucket's) gradients, and
  // over which replicas: the dense share over all of them; with expert
  // parallelism the experts' apart, over the replicas j, j + ep, ... that
  // hold the same experts.
  struct Share {
    const char* what = "dp";
    double bytes = 0;
    Replicas replicas;
  };
  std::vector<Share> gradient_shares(const VirtualStage& part) const {
    const double experts = cfg_.ep > 1 ? part.expert_param_bytes : 0;
    std::vector<Share> out{
        {"dp", (part.param_bytes - part.batch_param_bytes - experts) / cfg_.tp, {0, 1, replicas_}}};
    for (int j = 0; j < cfg_.ep && experts > 0; ++j)
      out.push_back({"expert-dp", experts / (cfg_.tp * cfg_.ep), {j, cfg_.ep, replicas_ / cfg_.ep}});
    return out;
  }

  // "dp-reducescatter/s3/t1", with "/r2" for strided replicas and "/b4" for a bucket.
  static std::string share_name(const Share& sh, const char* op, int s, int t, int bucket) {
    std::string id = fmt::format("{}-{}/s{}/t{}", sh.what, op, s, t);
    if (sh.replicas.stride > 1) id += fmt::format("/r{}", sh.replicas.first);
    if (bucket >= 0) id += fmt::format("/b{}", bucket);
    return id;
  }

  // An all-reduce over tensor ranks [t0, t0 + ranks) of the replicas `r`
  // (default: every one), after their passes `computes`.
  // With `after_exchanges`, also after the pass's context exchanges.
  void gradient_allreduce(const std::string& id, int device, double bytes,
                          const std::vector<std::size_t>& computes, int t0, int ranks,
                          plan::CollectiveOp op = plan::CollectiveOp::all_reduce, Replicas r = {},
                          bool after_exchanges = true) {
    if (r.count == 0) r.count = replicas_;
    const std::size_t idx = used_;
    plan::Task& ar = next_task(Kind::dp_allreduce);
    collective(
        ar, id, op, device, bytes,
        [&](int k) {
          return std::pair{t0 + k % ranks, r.replica(k / ranks)};
        },
        ranks * r.count);
    for (int k = 0; k < r.count; ++k) ar.deps.push_back(computes[at(r.replica(k))]);
    if (after_exchanges) ar.deps.insert(ar.deps.end(), pass_contexts_.begin(), pass_contexts_.end());
    ar.stream = kDataParallelStream;
    for (int k = 0; k < r.count; ++k)
      for (int t = t0; t < t0 + ranks; ++t) dp_tasks_of_[ranks_.gpu(t, r.replica(k), device)].push_back(idx);
  }

  // One memory-bound Adam step per GPU after its all-reduces, over the
  // parameters it holds (its device's weights).
  void emit_optimizer() {
    for (int p = 0; p < cfg_.pp; ++p) {
      // The parameters whose optimizer state the GPU holds (its ZeRO shard).
      const double params =
          it_.memory[at(p)].optimizer_bytes /
          model::state_precision(static_cast<double>(plan::dtype_size(model_.dtype))).optimizer;
      for (int d = 0; d < replicas_; ++d)
        for (int t = 0; t < cfg_.tp; ++t) {
          const topology::NodeId g = ranks_.gpu(t, d, p);
          plan::Task& opt = next_task(Kind::optimizer);
          opt.id = fmt::format("optimizer/{}", topo_.node(g).name);
          opt.kind = plan::TaskKind::compute;
          opt.devices = {device_(g)};
          opt.stream = kComputeStream;
          opt.deps = dp_tasks_of_[g];
          opt.dtype = plan::DType::f32;
          opt.mem_bytes = checked_bytes(params * kOptimizerBytesPerParam, "the optimizer step's traffic");
          optimizer_of_[g] = used_ - 1;
        }
    }
    emit_weight_allgathers();
  }

  // ZeRO: each rank updated its 1/dp of the weights; every tensor rank's
  // share of a stage (or bucket) is all-gathered over the replicas once
  // their steps are done.
  void emit_weight_allgathers() {
    for (const WeightGather& w : weight_allgathers_) {
      plan::Task& ag = next_task(Kind::dp_allreduce);
      gather_share(ag, w.share, w.stage, w.device, w.tensor_rank, w.bucket);
      for (int k = 0; k < w.share.replicas.count; ++k)
        ag.deps.push_back(optimizer_of_.at(ranks_.gpu(w.tensor_rank, w.share.replicas.replica(k), w.device)));
    }
  }

  // overlap_param_gather: the previous step's updated weights, gathered
  // bucket by bucket as this step starts (stream 5, nothing before them);
  // a chunk's first forward runs each bucket once its gathers are done.
  void emit_param_gathers() {
    if (!cfg_.overlap_param_gather || replicas_ < 2) return;
    param_gathers_.resize(at(stages_));
    for (int s = 0; s < stages_; ++s) {
      const int device = s % cfg_.pp;
      const auto& buckets = buckets_of(s);
      param_gathers_[at(s)].resize(buckets.size());
      for (std::size_t k = 0; k < buckets.size(); ++k)
        for (const Share& sh : gradient_shares(buckets[k])) {
          if (sh.replicas.count < 2 || sh.bytes <= 0) continue;
          for (int t = 0; t < cfg_.tp; ++t) {
            param_gathers_[at(s)][k].push_back(used_);
            gather_share(next_task(Kind::dp_allreduce), sh, s, device, t, static_cast<int>(k));
          }
        }
    }
  }

  // The all-gather of a share's updated weights on stream 5.
  void gather_share(plan::Task& ag, const Share& sh, int s, int device, int t, int bucket) {
    collective(
        ag, share_name(sh, "allgather", s, t, bucket), plan::CollectiveOp::all_gather, device, sh.bytes,
        [&](int k) {
          return std::pair{t, sh.replicas.replica(k)};
        },
        sh.replicas.count);
    ag.stream = kDataParallelStream;
  }

  // Expert parallelism: before a forward or backward pass of a stage with
  // MoE layers, per group of ep consecutive replicas and tensor rank, one
  // all-to-all of the pass's token dispatch and combine (iteration.h),
  // once every member's inputs have arrived.
  void exchange_tokens(const PipelineOp& op, int device) {
    pass_exchanges_.clear();
    const int s = op.chunk * cfg_.pp + device;
    const VirtualStage& vs = it_.stages[at(s)];
    if (cfg_.ep < 2 || op.pass == Pass::weight || vs.expert_exchange_bytes <= 0) return;
    const double bytes = cfg_.microbatch_size * vs.expert_exchange_bytes /
                         (cfg_.sequence_parallel ? cfg_.tp : 1) *
                         (cfg_.full_recompute() && op.pass == Pass::backward ? 2 : 1);
    for (int g = 0; g < replicas_ / cfg_.ep; ++g)
      for (int t = 0; t < cfg_.tp; ++t) {
        pass_exchanges_.push_back(used_);
        plan::Task& a2a = next_task(Kind::expert_alltoall);
        collective(
            a2a,
            fmt::format("{}{}/s{}/g{}/t{}/expert-alltoall", op.pass == Pass::forward ? 'F' : 'B',
                        op.microbatch, s, g, t),
            plan::CollectiveOp::all_to_all, device, bytes,
            [&](int k) {
              return std::pair{t, g * cfg_.ep + k};
            },
            cfg_.ep);
        a2a.stream = kComputeStream;
        for (int d = g * cfg_.ep; d < (g + 1) * cfg_.ep; ++d)
          incoming_.read(pass_key(op.pass == Pass::backward, s, op.microbatch, d), a2a.deps);
      }
  }

  // Context parallelism: before a forward or backward pass of a stage with
  // transformer layers, per group of cp adjacent ranks and tensor rank, an
  // all-gather over the group of the pass's keys and values (a backward
  // with full recomputation gathers them twice), and in a backward then a
  // reduce-scatter of their gradients; on stream 7 once every member's
  // inputs have arrived, so they run beside the pass, and what follows the
  // pass waits for them (joins_). Megatron-Core passes the same blocks
  // around a ring, step by step, each step's transfer beside the attention
  // of the block before: the same bytes over the same links.
  void exchange_context(const PipelineOp& op, int device) {
    pass_contexts_.clear();
    const int s = op.chunk * cfg_.pp + device;
    const VirtualStage& vs = it_.stages[at(s)];
    if (cfg_.cp < 2 || op.pass == Pass::weight || vs.context_exchange_bytes <= 0) return;
    const bool backward = op.pass == Pass::backward;
    const double kv = cfg_.microbatch_size * vs.context_exchange_bytes / cfg_.tp;
    const char pass_name = backward ? 'B' : 'F';
    for (int g = 0; g < cfg_.dp; ++g)
      for (int t = 0; t < cfg_.tp; ++t) {
        const auto member = [&](int k) { return std::pair{t, g * cfg_.cp + k}; };
        std::size_t last = used_;
        plan::Task& ag = next_task(Kind::context_exchange);
        collective(ag, fmt::format("{}{}/s{}/g{}/t{}/cp-allgather", pass_name, op.microbatch, s, g, t),
                   plan::CollectiveOp::all_gather, device, kv * (backward && cfg_.full_recompute() ? 2 : 1),
                   member, cfg_.cp);
        ag.stream = kContextStream;
        for (int c = 0; c < cfg_.cp; ++c)
          incoming_.read(pass_key(backward, s, op.microbatch, g * cfg_.cp + c), ag.deps);
        if (backward) {
          plan::Task& rs = next_task(Kind::context_exchange);
          collective(rs, fmt::format("B{}/s{}/g{}/t{}/cp-reducescatter", op.microbatch, s, g, t),
                     plan::CollectiveOp::reduce_scatter, device, kv, member, cfg_.cp);
          rs.stream = kContextStream;
          rs.deps.assign(1, last);
          last = used_ - 1;
        }
        pass_contexts_.push_back(last);
      }
  }

  // ZeRO-3: before a forward or backward pass of virtual stage s on
  // `device`, each tensor rank's share of the stage's weights is
  // all-gathered over the replicas, prefetched one pass ahead: it may start
  // once the pass before the previous one is done (as the previous pass
  // starts), so it overlaps the previous pass.
  void gather_weights(const PipelineOp& op, int device) {
    pass_gathers_.clear();
    if (cfg_.zero != model::ZeroStage::parameters || replicas_ < 2 || op.pass == Pass::weight) return;
    const int s = op.chunk * cfg_.pp + device;
    const VirtualStage& vs = it_.stages[at(s)];
    const double channels = (vs.param_bytes - vs.batch_param_bytes) / cfg_.tp;
    if (channels <= 0) return;
    for (int t = 0; t < cfg_.tp; ++t) {
      pass_gathers_.push_back(used_);
      plan::Task& ag = next_task(Kind::dp_allreduce);
      collective(
          ag,
          fmt::format("{}{}/s{}/t{}/weight-allgather", op.pass == Pass::forward ? 'F' : 'B', op.microbatch, s,
                      t),
          plan::CollectiveOp::all_gather, device, channels,
          [&](int d) {
            return std::pair{t, d};
          },
          replicas_);
      ag.stream = kWeightGatherStream;
      for (int d = 0; d < replicas_; ++d)
        if (const std::size_t before = computes_before_[at(device) * at(replicas_) + at(d)][0];
            before != kNone)
          ag.deps.push_back(before);
    }
  }

  topology::DeviceMesh mesh_of(int p, int d) const {
    topology::DeviceMesh mesh;
    mesh.rows = 1;
    mesh.cols = cfg_.tp;
    for (int t = 0; t < cfg_.tp; ++t) mesh.devices.push_back(ranks_.gpu(t, d, p));
    return mesh;
  }

  // The resharding plan of transfer x in one direction for replica d, made once.
  const Template* template_for(std::size_t x, bool backward, int d) {
    const StageTransfer& tr = it_.transfers[x];
    const int src_dev = (backward ? tr.dst_stage : tr.src_stage) % cfg_.pp;
    const int dst_dev = (backward ? tr.src_stage : tr.dst_stage) % cfg_.pp;
    if (src_dev == dst_dev) return nullptr;  // the same GPUs (pp = 1): nothing moves
    std::optional<Template>& slot = templates_[(2 * x + (backward ? 1 : 0)) * at(replicas_) + at(d)];
    if (slot) return &*slot;
    reshard::ReshardProblem prob;
    prob.tensor = {backward ? "grad" : "act", tr.shape, model_.dtype};
    prob.src = mesh_of(src_dev, d);
    prob.dst = mesh_of(dst_dev, d);
    const TransferPlan& tp = plans_.plan(std::move(prob), cfg_);
    if (!backward && d == 0) it_.transfers[x].strategy = tp.strategy;
    plan::Stamp at;
    for (const std::string& name : tp.fragment.devices) at.devices.push_back(device_(topo_.at(name)));
    return &slot.emplace(Template{&tp, std::move(at)});
  }

  // Stamps a template out under `prefix`; its roots wait for `after`. With
  // payloads, the stamp gets its own tensor and buffers. Returns its sinks
  // (good until the next call).
  const std::vector<std::size_t>& stamp(const Template& tpl, const std::string& prefix, int stream,
                                        std::size_t after, std::size_t also) {
    const std::size_t base = used_;
    const TransferPlan& tp = *tpl.plan;
    plan::Stamp named;
    if (cfg_.payloads) named = plan::stamp_names(it_.plan, tp.fragment, prefix, tpl.stamp);
    const plan::Stamp& at = cfg_.payloads ? named : tpl.stamp;
    for (std::size_t k = 0; k < tp.fragment.tasks.size(); ++k) {
      plan::Task& t = next_slot(Kind::stage_transfer);
      t = tp.fragment.tasks[k];  // into the slot's storage
      plan::stamp_task(t, at);
      t.id.assign(prefix).append("/").append(tp.ids[k]);
      t.stream = stream;
      if (t.deps.empty()) {
        t.deps.assign(1, after);
        if (also != after) t.deps.push_back(also);
        t.deps.insert(t.deps.end(), joins_.begin(), joins_.end());
      } else {
        for (auto& dep : t.deps) dep += base;
      }
    }
    sinks_.clear();
    for (std::size_t s : tp.sinks) sinks_.push_back(base + s);
    return sinks_;
  }

  TransferPlans own_plans_;  // unless the caller shares its own
  TransferPlans& plans_;
  const model::Model& model_;
  const topology::Topology& topo_;
  const PipelineConfig& cfg_;
  const PipelineRanks& ranks_;
  PipelineIteration& it_;
  const std::vector<std::vector<PipelineOp>>& ops_;
  const int replicas_;              // per tensor rank and device: dp·cp ranks, context ranks adjacent
  sim::PlanDevices device_;         // GPU -> its index in it_.plan.devices
  std::string prefix_;              // scratch: a pass's task id
  std::string name_;                // scratch: a transfer's task id prefix
  std::vector<std::size_t> sinks_;  // scratch: stamp()'s
  std::vector<std::size_t> sent_;   // scratch: send()'s sinks
  int stages_;
  // Per (pipeline device, replica): the last task of its latest pass.
  std::vector<std::size_t> last_end_;
  // What each pass waits for from other stages, by (backward?, stage, microbatch, replica).
  AppendLists incoming_;
  // The last pass of each chunk on each device releases its DP all-reduce.
  std::vector<std::vector<std::size_t>> last_of_chunk_;
  std::vector<std::optional<Template>> templates_;  // by (transfer, backward?, replica), made once
  // by (virtual stage, pass, gradient bucket or -1)
  std::map<std::tuple<int, Pass, int>, PassKernels> kernel_sets_;
  std::vector<std::vector<VirtualStage>> buckets_;  // per virtual stage, its gradient buckets (made on use)
  // Per replica, the compute task of each gradient bucket of its latest pass (run bucket by bucket).
  std::vector<std::vector<std::size_t>> bucket_computes_;
  // overlap_param_gather: per virtual stage and bucket, the gathers of its weights issued at the start.
  std::vector<std::vector<std::vector<std::size_t>>> param_gathers_;
  std::vector<std::vector<std::size_t>> first_of_chunk_;  // per device and chunk, its first forward's index
  std::vector<std::size_t> inputs_;                       // scratch: a pass's dependencies
  std::map<topology::NodeId, std::vector<std::size_t>> dp_tasks_of_;  // per GPU, its DP all-reduces
  std::size_t used_ = 0;                                              // tasks emitted so far
  // ZeRO: the weight all-gathers that follow the optimizer steps, per (stage, tensor rank).
  struct WeightGather {
    int stage = 0;
    int device = 0;
    int tensor_rank = 0;
    int bucket = -1;
    Share share;
  };
  std::vector<WeightGather> weight_allgathers_;
  std::map<topology::NodeId, std::size_t> optimizer_of_;  // per GPU, its optimizer step
  // ZeRO-3: the current pass's weight gathers, and per (device, replica) the computes of its last two passes.
  std::vector<std::size_t> pass_gathers_;
  std::vector<std::size_t> pass_exchanges_;  // the current pass's all-to-alls, per (group, tensor rank)
  std::vector<std::size_t> pass_contexts_;   // its key/value exchanges' last tasks, per (group, tensor rank)
  std::vector<std::size_t> joins_;           // what the current replica's pass ends with beside its last task
  std::vector<std::array<std::size_t, 2>> computes_before_;
  // By (virtual stage, backward?): the transfers its passes send, in order
  // (a forward its outputs, a backward the gradients of its inputs).
  std::vector<std::vector<std::size_t>> sent_by_;
};

}  // namespace

PipelineIteration build_pipeline(const model::Model& model, const topology::Topology& topo,
                                 const PipelineConfig& cfg,
                                 const std::vector<sim::DeviceModel>& device_models) {
  PipelineIteration it;
  build_pipeline_into(it, model, topo, cfg, device_models);
  return it;
}

void build_pipeline_into(PipelineIteration& it, const model::Model& model, const topology::Topology& topo,
                         const PipelineConfig& cfg, const std::vector<sim::DeviceModel>& device_models,
                         TransferPlans* shared) {
  if (cfg.dp < 1 || cfg.tp < 1 || cfg.pp < 1 || cfg.cp < 1 || cfg.microbatches < 1 ||
      cfg.microbatch_size < 1 || cfg.virtual_stages < 1 || cfg.first_gpu < 0)
    throw UsageError("dp, tp, pp, cp, microbatches, microbatch size and virtual stages must be at least 1");
  if ((cfg.cp > 1 || cfg.tp_comm_overlap) && !cfg.overlap)
    throw UsageError(
        "context parallelism's exchanges and overlapped tensor-parallel collectives run beside the passes: "
        "they need overlapped stage transfers (drop --no-overlap)");
  if (cfg.overlap_param_gather && cfg.zero != model::ZeroStage::optimizer &&
      cfg.zero != model::ZeroStage::gradients)
    throw UsageError(
        "overlapped parameter gathers are ZeRO-1 and 2's (the distributed optimizer's): ZeRO-3 gathers "
        "before every pass, and without ZeRO nothing is gathered");
  if (!(cfg.bucket_params >= 0 && cfg.bucket_params <= 1e15))
    throw UsageError(
        fmt::format("a gradient bucket holds 0 (the default) to 1e15 parameters, got {}", cfg.bucket_params));
  const PipelineRanks ranks(topo, cfg, device_models);
  if (cfg.fp8 && ranks.device_model().fp8_flops <= 0)
    throw UsageError(fmt::format("FP8 GEMMs need FP8 tensor cores, which the {} lacks ({} have them)",
                                 ranks.device_model().name, hardware::fp8_gpu_names()));
  const auto ops = checked_ops(model, cfg);
  std::vector<plan::Task> slots = std::move(it.plan.tasks);  // the builder writes over them
  it = PipelineIteration{};
  it.plan.tasks = std::move(slots);
  it.config = cfg;
  it.global_batch = std::int64_t{cfg.dp} * cfg.microbatches * cfg.microbatch_size;  // < 2^23 x 2^31
  it.model_flops = 3 * model.forward_flops() * static_cast<double>(it.global_batch);
  it.tokens = static_cast<double>(it.global_batch) * static_cast<double>(model.sequence);
  it.peak_flops = ranks.device_model().peak(model.dtype);
  it.stage_gpus = ranks.stage_gpus();
  it.placement_notes = ranks.placement_notes();
  std::vector<int> stage_of;
  it.stages =
      laid_out_stages(model, cfg, ops, stage_of,
                      cfg.usable_memory(static_cast<double>(ranks.device_model().memory_capacity.count())));
  it.transfers = stage_transfers(model, stage_of, cfg.microbatch_size, cfg.cp);
  const ScheduleTimeline ideal = timeline(ops, cfg.pp, cfg.virtual_stages,
                                          ideal_pass_times(it.stages, cfg, ranks.device_model(), model), 0);
  it.ideal_bubble = ideal.bubble;
  it.ideal_makespan_s = ideal.makespan;
  it.plan.name = fmt::format("{} dp{}{} tp{} pp{} {} m{}{}", model.name, cfg.dp,
                             cfg.cp > 1 ? fmt::format(" cp{}", cfg.cp) : std::string(), cfg.tp, cfg.pp,
                             to_string(cfg.schedule), cfg.microbatches,
                             cfg.full_recompute()                           ? " recompute"
                             : cfg.recompute == model::Recompute::selective ? " selective recompute"
                                                                            : "");
  it.memory = device_memory(model, it.stages, ops, cfg);  // the optimizer steps read it
  PipelineBuilder(model, topo, cfg, ranks, it, ops, shared).emit(ideal);
}

std::vector<DeviceMemory> pipeline_memory(const model::Model& model, const model::ParallelConfig& cfg,
                                          double capacity) {
  const auto ops = checked_ops(model, cfg);
  std::vector<int> stage_of;
  return device_memory(model, laid_out_stages(model, cfg, ops, stage_of, capacity), ops, cfg);
}

}  // namespace meshsim::pipeline
