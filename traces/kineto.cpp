#include "traces/kineto.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_writer.h"

namespace meshsim::traces {

namespace {

using plan::Phase;

// A complete event with numeric pid and tid (Kineto also writes string
// pids for its own spans, and metadata, flows and counters).
struct Event {
  const Json* json = nullptr;
  std::string cat;
  std::string name;
  double ts = 0;  // µs
  double dur = 0;
  double pid = 0;
  double tid = 0;
};

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<double> number_arg(const Json& e, const char* key) {
  const auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return std::nullopt;
  const auto v = a->find(key);
  if (v == a->end() || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::string string_arg(const Json& e, const char* key) {
  const auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return "";
  const auto v = a->find(key);
  return v != a->end() && v->is_string() ? v->get<std::string>() : "";
}

// The collective an NCCL kernel runs; nullopt for a kernel that is not NCCL's.
std::optional<Phase> nccl_phase(const Event& e) {
  const std::string n = lower(e.name);
  if (n.find("nccl") == std::string::npos) return std::nullopt;
  const std::string said = lower(string_arg(*e.json, "Collective name"));
  if (n.find("allreduce") != std::string::npos) return Phase::all_reduce;
  if (n.find("allgather") != std::string::npos) return Phase::all_gather;
  if (n.find("reducescatter") != std::string::npos) return Phase::reduce_scatter;
  if (said.find("all_to_all") != std::string::npos || said.find("alltoall") != std::string::npos)
    return Phase::all_to_all;
  if (n.find("sendrecv") != std::string::npos || n.find("broadcast") != std::string::npos)
    return Phase::send_recv;
  if (said.find("allreduce") != std::string::npos || n.find("reduce") != std::string::npos)
    return Phase::all_reduce;
  return Phase::send_recv;
}

bool gpu_work(const std::string& cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

}  // namespace

MeasuredStep kineto_step(const Json& trace, const std::string& file, std::optional<int> step) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw ConfigError(file, "traceEvents", "not a PyTorch profiler (Kineto) trace: no traceEvents array");
  MeasuredStep out;
  if (auto d = trace.find("distributedInfo"); d != trace.end() && d->is_object()) {
    if (d->contains("rank") && (*d)["rank"].is_number_integer()) out.rank = (*d)["rank"].get<int>();
    if (d->contains("world_size") && (*d)["world_size"].is_number_integer())
      out.world_size = (*d)["world_size"].get<int>();
  }
  std::vector<Event> events;
  for (const Json& e : trace["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const auto pid = e.find("pid"), tid = e.find("tid"), ts = e.find("ts"), dur = e.find("dur");
    if (pid == e.end() || tid == e.end() || ts == e.end() || dur == e.end() || !pid->is_number() ||
        !tid->is_number() || !ts->is_number() || !dur->is_number())
      continue;
    events.push_back({&e, e.value("cat", ""), e.value("name", ""), ts->get<double>(), dur->get<double>(),
                      pid->get<double>(), tid->get<double>()});
  }
  // The step: the one asked for, else the last.
  const Event* chosen = nullptr;
  std::vector<double> step_starts;
  for (const Event& e : events)
    if (starts_with(e.name, "ProfilerStep#") && (e.cat == "user_annotation" || e.cat == "cpu_op")) {
      step_starts.push_back(e.ts);
      const bool wanted = !step || e.name == fmt::format("ProfilerStep#{}", *step);
      if (wanted && (chosen == nullptr || step || e.ts > chosen->ts)) chosen = &e;
    }
  if (chosen == nullptr)
    throw ConfigError(file, "traceEvents",
                      step
                          ? fmt::format("no ProfilerStep#{} (profile with a schedule that records it)", *step)
                          : std::string("no ProfilerStep#N annotation: profile the iteration with "
                                        "torch.profiler.profile(...) and prof.step() after it"));
  out.step = chosen->name;
  const double begin = chosen->ts, end = chosen->ts + chosen->dur;
  double next = std::numeric_limits<double>::infinity();
  for (double s : step_starts)
    if (s > begin) next = std::min(next, s);
  double backward = std::numeric_limits<double>::infinity(), optimizer = backward;
  std::map<double, double> launched;  // correlation -> launch time
  for (const Event& e : events) {
    const bool inside = e.ts >= begin && e.ts <= end;
    if (inside && starts_with(e.name, "autograd::engine::evaluate_function:"))
      backward = std::min(backward, e.ts);
    if (inside && starts_with(e.name, "Optimizer.step#")) optimizer = std::min(optimizer, e.ts);
    if (e.cat == "cuda_runtime" || e.cat == "cuda_driver")
      if (auto c = number_arg(*e.json, "correlation")) launched[*c] = e.ts;
  }
  struct Work {
    const Event* e;
    double launch;
  };
  std::vector<Work> work;
  for (const Event& e : events) {
    if (!gpu_work(e.cat)) continue;
    double launch = e.ts;  // without a launch record: where it ran
    if (auto c = number_arg(*e.json, "correlation"); c && launched.count(*c)) launch = launched[*c];
    const bool mine = launched.empty() || !number_arg(*e.json, "correlation")
                          ? e.ts >= begin && e.ts < next
                          : launch >= begin && launch <= end;
    if (mine) work.push_back({&e, launch});
  }
  if (work.empty()) throw ConfigError(file, "traceEvents", fmt::format("no GPU work in {}", out.step));
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const Work& w : work) {
    first = std::min(first, w.e->ts);
    last = std::max(last, w.e->ts + w.e->dur);
  }
  out.span = Time::from_seconds((last - first) * 1e-6);
  const int device = static_cast<int>(work.front().e->pid);
  if (auto props = trace.find("deviceProperties"); props != trace.end() && props->is_array())
    for (const Json& d : *props)
      if (d.is_object() && d.value("id", -1) == device) out.gpu = d.value("name", "");
  for (const Work& w : work) {
    Phase phase = Phase::forward;
    if (auto p = nccl_phase(*w.e))
      phase = *p;
    else if (w.launch >= optimizer)
      phase = Phase::optimizer;
    else if (w.launch >= backward)
      phase = Phase::backward;
    out.events.push_back({phase, w.e->name, static_cast<int>(w.e->tid),
                          Time::from_seconds((w.e->ts - first) * 1e-6), Time::from_seconds(w.e->dur * 1e-6)});
  }
  std::sort(out.events.begin(), out.events.end(),
            [](const plan::PhaseEvent& a, const plan::PhaseEvent& b) { return a.start < b.start; });
  return out;
}

MeasuredStep load_kineto_step(const std::string& file, std::optional<int> step) {
  return kineto_step(read_json_file(file), file, step);
}

namespace {

// The side-by-side trace's events, one at a time.
void each_side_by_side_event(const std::vector<plan::PhaseEvent>& measured, const std::string& measured_name,
                             const std::vector<plan::PhaseEvent>& predicted,
                             const std::string& predicted_name,
                             const std::function<void(const Json&)>& emit) {
  auto add = [&](int pid, const std::string& name, const std::vector<plan::PhaseEvent>& list) {
    emit(Json{{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}});
    emit(Json{{"ph", "M"},
              {"name", "process_sort_index"},
              {"pid", pid},
              {"tid", 0},
              {"args", {{"sort_index", pid}}}});
    std::vector<int> streams;
    for (const plan::PhaseEvent& e : list) {
      if (std::find(streams.begin(), streams.end(), e.stream) == streams.end()) {
        streams.push_back(e.stream);
        emit(Json{{"ph", "M"},
                  {"name", "thread_name"},
                  {"pid", pid},
                  {"tid", e.stream},
                  {"args", {{"name", fmt::format("stream {}", e.stream)}}}});
      }
      emit(Json{{"ph", "X"},
                {"name", e.name},
                {"cat", std::string(plan::kPhaseNames.name(e.phase))},
                {"pid", pid},
                {"tid", e.stream},
                {"ts", e.start.microseconds()},
                {"dur", e.duration.microseconds()},
                {"args", {{"phase", std::string(plan::kPhaseNames.name(e.phase))}}}});
    }
  };
  add(1, measured_name, measured);
  add(2, predicted_name, predicted);
}

}  // namespace

Json side_by_side_trace(const std::vector<plan::PhaseEvent>& measured, const std::string& measured_name,
                        const std::vector<plan::PhaseEvent>& predicted, const std::string& predicted_name) {
  Json events = Json::array();
  each_side_by_side_event(measured, measured_name, predicted, predicted_name,
                          [&](const Json& e) { events.push_back(e); });
  return Json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

void write_side_by_side_trace(std::ostream& out, const std::vector<plan::PhaseEvent>& measured,
                              const std::string& measured_name,
                              const std::vector<plan::PhaseEvent>& predicted,
                              const std::string& predicted_name) {
  JsonWriter w(out, Json{{"traceEvents", Json::array()}, {"displayTimeUnit", "ms"}});
  w.begin_array("traceEvents");
  each_side_by_side_event(measured, measured_name, predicted, predicted_name,
                          [&](const Json& e) { w.add(e); });
  w.end_array();
  w.finish();
}

}  // namespace meshsim::traces
