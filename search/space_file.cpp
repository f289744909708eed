#include "search/space_file.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/input_file.h"
#include "core/json.h"
#include "topology/placement.h"
#include "topology/topology_json.h"

namespace meshsim::search {

namespace {

constexpr std::string_view kFormat = "meshsim.search/1";

// A non-empty array of `read(element)`.
template <typename T, typename Read>
std::vector<T> list_of(const JsonCursor& c, Read read) {
  if (!c.json().is_array() || c.size() == 0) c.fail("expected a non-empty array");
  std::vector<T> out;
  for (std::size_t i = 0; i < c.size(); ++i) out.push_back(read(c.at(i)));
  return out;
}

// An element naming a value of an enum with a names table.
template <typename Names>
auto named(const Names& names) {
  return [&names](const JsonCursor& c) {
    const auto v = names.parse(c.as_string());
    if (!v) c.fail(fmt::format("unknown {} (known: {})", names.what(), fmt::join(names.names(), ", ")));
    return *v;
  };
}

}  // namespace

bool is_search_space(const std::string& file) {
  return has_format(read_json_file(file), kFormat);
}

SpaceFile load_space_file(const std::string& file) {
  const Json j = read_json_file(file);
  const JsonCursor root(j, file);
  if (!root.is_object()) root.fail("a search space is a JSON object");
  root.allow_only({"format",
                   "name",
                   "description",
                   "model",
                   "machine",
                   "topology",
                   "placement",
                   "compute_efficiency",
                   "global_batch",
                   "gpus",
                   "microbatch_sizes",
                   "schedules",
                   "virtual_stages",
                   "recompute",
                   "reshards",
                   "tp_across_hosts",
                   "memory_reserve",
                   "host_per_kernel",
                   "fp8",
                   "overlap_grad_reduce",
                   "overlap_param_gather",
                   "tp_comm_overlap",
                   "sequence_parallel",
                   "zero",
                   "flash_attention",
                   "ep",
                   "cp",
                   "tp",
                   "pp",
                   "dp"});
  root.require_format(kFormat);
  SpaceFile f;
  f.name = root["name"].as_name();
  if (auto d = root.find("description")) f.description = d->as_string();
  f.model = resolve_beside(file, root["model"].as_name());
  if (root.has("machine") == root.has("topology"))
    root.fail("give either \"machine\" (a cluster of a host preset) or \"topology\" (a file or preset)");
  if (auto m = root.find("machine")) f.machine = topology::cluster_spec_from_json(*m);
  if (auto t = root.find("topology")) f.topology = resolve_beside(file, t->as_name());
  if (auto p = root.find("placement")) f.placement = topology::placement_from_json(*p);
  if (auto e = root.find("compute_efficiency")) {
    const double v = e->as_number();
    if (!(v >= 0.01 && v <= 1)) e->fail("expected a fraction in [0.01, 1]");
    f.compute_efficiency = v;
  }
  Space& s = f.space;
  s.global_batch = static_cast<int>(root["global_batch"].as_int_in(1, 1 << 24));
  if (auto g = root.find("gpus")) s.gpus = static_cast<int>(g->as_int_in(1, 1 << 24));
  auto positive = [](const JsonCursor& c) { return static_cast<int>(c.as_int_in(1, 1 << 16)); };
  if (auto m = root.find("microbatch_sizes")) s.microbatch_sizes = list_of<int>(*m, positive);
  if (auto v = root.find("virtual_stages"))
    s.virtual_stages =
        list_of<int>(*v, [](const JsonCursor& c) { return static_cast<int>(c.as_int_in(2, 64)); });
  if (auto sc = root.find("schedules"))
    s.schedules = list_of<model::Schedule>(*sc, named(model::kScheduleNames));
  if (auto r = root.find("reshards"))
    s.reshards = list_of<reshard::Strategy>(*r, named(reshard::kStrategyNames));
  if (auto r = root.find("recompute"))  // true and false stand for full and none
    s.recompute = list_of<model::Recompute>(*r, [](const JsonCursor& c) {
      if (c.json().is_boolean()) return c.as_bool() ? model::Recompute::full : model::Recompute::none;
      return named(model::kRecomputeNames)(c);
    });
  auto flag = [](const JsonCursor& c) { return c.as_bool(); };
  if (auto v = root.find("sequence_parallel")) s.sequence_parallel = list_of<bool>(*v, flag);
  if (auto v = root.find("flash_attention")) s.flash_attention = list_of<bool>(*v, flag);
  if (auto v = root.find("zero"))
    s.zero = list_of<model::ZeroStage>(
        *v, [](const JsonCursor& c) { return static_cast<model::ZeroStage>(c.as_int_in(0, 3)); });
  if (auto v = root.find("ep")) s.ep = list_of<int>(*v, positive);
  if (auto v = root.find("cp")) s.cp = list_of<int>(*v, positive);
  if (auto v = root.find("tp")) s.tp = list_of<int>(*v, positive);
  if (auto v = root.find("pp")) s.pp = list_of<int>(*v, positive);
  if (auto v = root.find("dp")) s.dp = list_of<int>(*v, positive);
  if (auto t = root.find("tp_across_hosts")) s.tp_across_hosts = t->as_bool();
  if (auto r = root.find("memory_reserve")) s.memory_reserve = r->as_bytes();
  if (auto v = root.find("fp8")) s.fp8 = v->as_bool();
  if (auto v = root.find("overlap_grad_reduce")) s.overlap_grad_reduce = v->as_bool();
  if (auto v = root.find("overlap_param_gather")) s.overlap_param_gather = v->as_bool();
  if (auto v = root.find("tp_comm_overlap")) s.tp_comm_overlap = v->as_bool();
  if (auto h = root.find("host_per_kernel")) {
    s.host_per_kernel = h->as_time();
    if (s.host_per_kernel < Time::zero() || s.host_per_kernel > Time::s(1))
      h->fail("host work per kernel is between 0 and 1 s");
  }
  // The built-in lists repeat nothing, so a repeat is in a list the file gives.
  if (auto r = repeated_value(s))
    root[r->list].at(r->index).fail("repeats an earlier value (each would be searched twice)");
  return f;
}

}  // namespace meshsim::search
