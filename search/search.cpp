#include "search/search.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/append_lists.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/memory_limit.h"
#include "core/thread_group.h"
#include "pipeline/layout.h"

namespace meshsim::search {

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// The memory estimate needs only the stage layout and the schedule:
// configurations that do not fit are dropped before a plan is built. The
// result is out_of_memory, invalid (with the reason), or simulated with
// its metrics still to come (simulate_into).
Result check_memory(const pipeline::PipelineConfig& cfg, const model::Model& m, const Options& o) {
  Result r;
  r.config = cfg;
  r.status = Status::simulated;
  try {
    for (const pipeline::DeviceMemory& d :
         pipeline::pipeline_memory(m, cfg, cfg.usable_memory(o.memory_capacity)))
      r.peak_memory_bytes = std::max(r.peak_memory_bytes, d.total());
    if (!model::fits_in(r.peak_memory_bytes, o.memory_capacity, cfg.memory_reserve))
      r.status = Status::out_of_memory;
  } catch (const UsageError& e) {
    r.status = Status::invalid;
    r.reason = e.what();
  }
  return r;
}

// What a thread keeps from one configuration to the next: each plan is
// built over the last one's storage, and plans share the transfer plans,
// runs the collectives and paths, that they have in common.
struct ThreadState {
  pipeline::PipelineIteration it;
  pipeline::TransferPlans transfers;
  sim::RunCache runs;
};

// Builds and simulates r's configuration with the calling thread's state.
void simulate_into(Result& r, const model::Model& m, const topology::Topology& t, const Options& o,
                   ThreadState& state) {
  pipeline::PipelineIteration& it = state.it;
  try {
    pipeline::build_pipeline_into(it, m, t, r.config, o.device_models, &state.transfers);
    sim::SimOptions so;
    so.device_models = o.device_models;
    so.fluid_broadcast = true;  // as `meshsim pipeline` simulates by default
    so.cache = &state.runs;
    const pipeline::PipelineMetrics pm = pipeline::pipeline_metrics(it, t, sim::simulate(it.plan, t, so));
    r.metrics = {pm.iteration_s, pm.samples_per_s, pm.tflops_per_gpu, pm.bubble, pm.exposed_comm_s()};
  } catch (const UsageError& e) {
    r.status = Status::invalid;
    r.reason = e.what();
  }
}

// The first element of `v` equal to an earlier one, written by `name`.
template <typename T, typename Name>
std::optional<RepeatedValue> repeat_in(const char* list, const std::vector<T>& v, Name name) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (std::find(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v[i]) !=
        v.begin() + static_cast<std::ptrdiff_t>(i))
      return RepeatedValue{list, i, name(v[i])};
  return std::nullopt;
}

}  // namespace

std::optional<RepeatedValue> repeated_value(const Space& s) {
  auto number = [](int x) { return std::to_string(x); };
  if (auto r = repeat_in("microbatch_sizes", s.microbatch_sizes, number)) return r;
  if (auto r = repeat_in("virtual_stages", s.virtual_stages, number)) return r;
  if (auto r =
          repeat_in("schedules", s.schedules, [](model::Schedule x) { return std::string(to_string(x)); }))
    return r;
  if (auto r =
          repeat_in("reshards", s.reshards, [](reshard::Strategy x) { return std::string(to_string(x)); }))
    return r;
  if (auto r = repeat_in("recompute", s.recompute,
                         [](model::Recompute x) { return std::string(model::kRecomputeNames.name(x)); }))
    return r;
  auto boolean = [](bool x) { return std::string(x ? "true" : "false"); };
  if (auto r = repeat_in("sequence_parallel", s.sequence_parallel, boolean)) return r;
  if (auto r = repeat_in("flash_attention", s.flash_attention, boolean)) return r;
  if (auto r =
          repeat_in("zero", s.zero, [](model::ZeroStage x) { return std::to_string(static_cast<int>(x)); }))
    return r;
  if (auto r = repeat_in("ep", s.ep, number)) return r;
  if (auto r = repeat_in("cp", s.cp, number)) return r;
  if (auto r = repeat_in("tp", s.tp, number)) return r;
  if (auto r = repeat_in("pp", s.pp, number)) return r;
  return repeat_in("dp", s.dp, number);
}

namespace {

bool allowed(const std::vector<int>& fixed, int degree) {
  return fixed.empty() || std::find(fixed.begin(), fixed.end(), degree) != fixed.end();
}

// Whether context parallelism of degree cp can split the model's sequences
// (with fused attention).
bool splits_sequences(const model::Model& m, int cp) {
  try {
    model::check_context_parallel(m, cp, true);
    return true;
  } catch (const UsageError&) {
    return false;
  }
}

// The training options of a layout of degrees tp, dp and cp: sequence
// parallelism only where there is tensor parallelism, ZeRO only where there
// are replicas (elsewhere they would repeat a configuration), context
// parallelism only with fused attention, expert parallelism only of
// degrees dividing the replicas and the experts.
template <typename Emit>
void each_training_option(const Space& s, const model::Model& m, int tp, int dp, int cp, Emit emit) {
  const std::int64_t experts = m.architecture && m.architecture->moe ? m.architecture->moe->experts : 0;
  for (model::Recompute rc : s.recompute)
    for (bool sp : s.sequence_parallel) {
      if (sp && tp == 1) continue;
      for (model::ZeroStage z : s.zero) {
        if (z != model::ZeroStage::none && dp * cp == 1) continue;
        for (bool fa : s.flash_attention) {
          if (cp > 1 && !fa) continue;
          for (int ep : s.ep) {
            if (ep > 1 && ((dp * cp) % ep != 0 || experts % ep != 0)) continue;
            emit(rc, sp, z, fa, ep);
          }
        }
      }
    }
}

}  // namespace

std::vector<pipeline::PipelineConfig> enumerate(const Space& s, const model::Model& m,
                                                const topology::Topology& t) {
  const int all = static_cast<int>(t.gpus().size());
  const int gpus = s.gpus > 0 ? s.gpus : all;
  if (gpus > all) throw UsageError(fmt::format("the space asks for {} GPUs; the topology has {}", gpus, all));
  if (s.global_batch < 1) throw UsageError("the space needs a global batch of at least 1");
  const int per_host = t.host_count() > 0 ? static_cast<int>(t.host_gpus(0).size()) : all;
  const int layers = static_cast<int>(m.layers.size());
  std::vector<pipeline::PipelineConfig> out;
  for (int tp : divisors(gpus)) {
    if ((tp > per_host && !s.tp_across_hosts) || !allowed(s.tp, tp)) continue;
    for (int cp : s.cp) {
      if ((gpus / tp) % cp != 0 || (cp > 1 && !splits_sequences(m, cp))) continue;
      for (int pp : divisors(gpus / (tp * cp))) {
        if (pp > layers || !allowed(s.pp, pp)) continue;
        const int dp = gpus / (tp * cp * pp);
        if (s.global_batch % dp != 0 || !allowed(s.dp, dp)) continue;
        const int replica_batch = s.global_batch / dp;
        for (int mbs : s.microbatch_sizes) {
          if (mbs < 1 || replica_batch % mbs != 0) continue;
          for (model::Schedule sch : s.schedules) {
            const std::vector<int> vs =
                sch == model::Schedule::interleaved_1f1b ? s.virtual_stages : std::vector<int>{1};
            for (int v : vs)
              each_training_option(
                  s, m, tp, dp, cp, [&](model::Recompute rc, bool sp, model::ZeroStage z, bool fa, int ep) {
                    for (reshard::Strategy r : s.reshards) {
                      pipeline::PipelineConfig c;
                      c.dp = dp;
                      c.tp = tp;
                      c.pp = pp;
                      c.microbatch_size = mbs;
                      c.microbatches = replica_batch / mbs;
                      c.schedule = sch;
                      c.virtual_stages = v;
                      c.recompute = rc;
                      c.sequence_parallel = sp;
                      c.zero = z;
                      c.flash_attention = fa;
                      c.ep = ep;
                      c.cp = cp;
                      c.reshard = r;
                      c.memory_reserve = s.memory_reserve;
                      c.host_per_kernel = s.host_per_kernel;
                      c.fp8 = s.fp8;
                      c.overlap_grad_reduce = s.overlap_grad_reduce;
                      c.overlap_param_gather = s.overlap_param_gather && (z == model::ZeroStage::optimizer ||
                                                                          z == model::ZeroStage::gradients);
                      c.tp_comm_overlap = s.tp_comm_overlap && tp > 1;
                      out.push_back(c);
                    }
                  });
          }
        }
      }
    }
  }
  if (out.empty()) throw UsageError(fmt::format("no configuration of {} GPUs fits the space", gpus));
  return out;
}

std::string_view to_string(Status s) {
  switch (s) {
    case Status::simulated: return "simulated";
    case Status::out_of_memory: return "out_of_memory";
    case Status::invalid: return "invalid";
  }
  return "?";
}

pipeline::PipelineConfig plan_class(pipeline::PipelineConfig c, bool memory_only) {
  if (c.pp == 1 || (c.tp == 1 && c.reshard != reshard::Strategy::signal))
    c.reshard = reshard::Strategy::send_recv;
  if (memory_only && c.zero == model::ZeroStage::gradients) c.zero = model::ZeroStage::optimizer;
  return c;
}

std::vector<Result> run(const std::vector<pipeline::PipelineConfig>& configs, const model::Model& m,
                        const topology::Topology& t, const Options& o,
                        const std::function<void(std::size_t, std::size_t)>& progress) {
  // Each plan class is evaluated by its first configuration; the others
  // (its followers, in order) take a copy of that result.
  std::vector<std::size_t> leaders;
  AppendLists followers(configs.size());
  {
    const bool memory_only = !model::layers_list_kernels(m);
    std::map<pipeline::PipelineConfig, std::size_t> first;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const auto [at, fresh] =
          first.try_emplace(o.share_equal_plans ? plan_class(configs[i], memory_only) : configs[i], i);
      if (fresh)
        leaders.push_back(i);
      else
        followers.append(at->second, i);
    }
  }
  std::vector<Result> results(configs.size());
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::mutex report_lock;
  // Each thread builds its plans over the last one's storage; together they
  // take turns within the memory limit.
  MemoryBudget budget(memory_limit().bytes);
  auto take_configurations = [&](bool report) {
    MemoryBudget::Share share(budget);  // given back after `state` frees its storage
    ThreadState state;
    std::vector<std::size_t> same;
    for (std::size_t n = next++; n < leaders.size(); n = next++) {
      const std::size_t i = leaders[n];
      same.assign(1, i);
      followers.read(i, same);
      // Each its memory verdict; the plan, simulated once by the first that
      // fits (within the threads' memory budget), serves all that fit.
      bool any_fits = false;
      for (std::size_t k : same) {
        results[k] = check_memory(configs[k], m, o);
        any_fits = any_fits || results[k].status == Status::simulated;
      }
      if (any_fits)
        share.hold(static_cast<std::int64_t>(std::min(pipeline::plan_bytes(configs[i]), 9e18)),
                   [&] { state.it = pipeline::PipelineIteration{}; });
      const Result* simulated = nullptr;
      for (std::size_t k : same) {
        if (results[k].status != Status::simulated) continue;
        if (simulated == nullptr) {
          simulate_into(results[k], m, t, o, state);
          simulated = &results[k];
        } else {
          results[k].status = simulated->status;
          results[k].metrics = simulated->metrics;
          results[k].reason = simulated->reason;
        }
      }
      if (o.on_result) {
        const std::lock_guard<std::mutex> hold(report_lock);
        for (std::size_t k : same) o.on_result(k, results[k]);
      }
      const std::size_t d = done += same.size();
      if (report && progress) progress(d, configs.size());
    }
  };
  auto work = [&](bool report) {
    try {
      take_configurations(report);
    } catch (...) {
      next = leaders.size();  // the others stop after their current configuration
      throw;
    }
  };
  ThreadGroup workers("search threads (--threads)");
  for (int k = 1; k < std::max(1, o.threads); ++k)
    workers.start([&] { work(false); }, static_cast<std::size_t>(o.threads - 1));
  work(true);
  workers.join();
  if (progress) progress(configs.size(), configs.size());
  return results;
}

std::vector<std::size_t> ranking(const std::vector<Result>& results) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i].status == Status::simulated) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    return results[a].metrics.iteration_s < results[b].metrics.iteration_s;
  });
  return out;
}

std::vector<Band> bands(const std::vector<Result>& at_slow, const std::vector<Result>& at_fast) {
  MESHSIM_ASSERT(at_slow.size() == at_fast.size(), "a band has both ends");
  std::vector<Band> out;
  for (std::size_t i = 0; i < at_slow.size(); ++i) {
    auto time = [](const Result& r) { return r.status == Status::simulated ? r.metrics.iteration_s : 0.0; };
    out.push_back({time(at_slow[i]), time(at_fast[i])});
  }
  return out;
}

bool ties(const Band& winner, const Band& other) {
  return other.fast_s > 0 && winner.slow_s > 0 && other.fast_s <= winner.slow_s;
}

}  // namespace meshsim::search
