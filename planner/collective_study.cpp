#include "planner/collective_study.h"

#include <cmath>

#include <fmt/format.h>

#include "core/csv.h"
#include "core/error.h"
#include "planner/study.h"
#include "sim/executor.h"
#include "sim/ring_order.h"
#include "topology/topology_json.h"

namespace meshsim::planner {

namespace {

constexpr std::string_view kFormat = "meshsim.collective-study/1";

template <typename E>
std::optional<E> auto_or(const JsonCursor& c, std::optional<E> (*from)(std::string_view),
                         const std::string& names) {
  const std::string s = c.as_string();
  if (s == "auto") return std::nullopt;
  if (auto v = from(s)) return v;
  c.fail(fmt::format("unknown \"{}\" (expected auto, {})", s, names));
}

CollectiveStudyRow row_from_json(const JsonCursor& c) {
  c.allow_only({"name", "machine", "routing", "op", "size", "algorithm", "protocol", "published", "tolerance",
                "source"});
  CollectiveStudyRow r;
  r.name = c["name"].as_string();
  r.machine = topology::cluster_spec_from_json(c["machine"]);
  if (auto v = c.find("routing")) {
    const auto p = topology::routing_policy_from(v->as_string());
    if (!p) v->fail(fmt::format("unknown routing \"{}\" (expected ecmp or adaptive)", v->as_string()));
    r.routing = *p;
  }
  const JsonCursor op = c["op"];
  const auto o = plan::op_from(op.as_string());
  if (!o) op.fail(fmt::format("unknown op \"{}\" (expected {})", op.as_string(), plan::op_names()));
  r.op = *o;
  r.size = c["size"].as_bytes();
  if (r.size.count() <= 0) c["size"].fail("the size must be greater than zero");
  if (auto v = c.find("algorithm")) r.algorithm = auto_or(*v, &plan::algorithm_from, plan::algorithm_names());
  if (auto v = c.find("protocol")) r.protocol = auto_or(*v, &plan::protocol_from, plan::protocol_names());
  const JsonCursor pub = c["published"];
  pub.allow_only({"busbw_GBps", "time_us"});
  if (pub.has("busbw_GBps") == pub.has("time_us")) pub.fail("give exactly one of busbw_GBps and time_us");
  r.published_is_time = pub.has("time_us");
  const JsonCursor v = pub[r.published_is_time ? "time_us" : "busbw_GBps"];
  r.published = v.as_number();
  if (!(r.published > 0) || !std::isfinite(r.published)) v.fail("a published figure is greater than zero");
  r.tolerance = c["tolerance"].as_number();
  if (!(r.tolerance > 0 && r.tolerance < 1)) c["tolerance"].fail("a tolerance is a fraction in (0, 1)");
  r.source = c["source"].as_string();
  return r;
}

}  // namespace

bool is_collective_study(const std::string& file) {
  return has_format(read_json_file(file), kFormat);
}

CollectiveStudy load_collective_study(const std::string& file) {
  const Json j = read_json_file(file);
  const JsonCursor root(j, file);
  if (!j.is_object()) root.fail("a collective study is a JSON object");
  root.require_format(kFormat);
  root.allow_only({"format", "name", "description", "rows"});
  CollectiveStudy s;
  s.name = root["name"].as_string();
  if (auto d = root.find("description")) s.description = d->as_string();
  const JsonCursor rows = root["rows"];
  rows.require_unique("name");
  for (std::size_t i = 0; i < rows.size_at_most(kMaxStudyCases, "rows"); ++i)
    s.rows.push_back(row_from_json(rows.at(i)));
  if (s.rows.empty()) rows.fail("a study needs at least one row");
  return s;
}

CollectiveStudyResult run_collective_row(const CollectiveStudyRow& row) {
  topology::Topology t = topology::build_cluster(row.machine);
  t.routing = row.routing;
  plan::Plan plan;
  plan::Task task;
  task.id = row.name;
  task.kind = plan::TaskKind::collective;
  task.op = row.op;
  task.size = row.size;
  task.algorithm = row.algorithm;
  task.protocol = row.protocol;
  for (topology::NodeId g : sim::ring_order(t, t.gpus())) {
    task.devices.push_back(plan.devices.size());
    plan.devices.push_back(t.node(g).name);
  }
  const auto n = static_cast<std::int64_t>(task.devices.size());
  plan.tasks.push_back(std::move(task));
  const sim::SimResult r = sim::simulate(plan, t);
  CollectiveStudyResult out;
  const double secs = r.makespan.seconds();
  out.predicted = row.published_is_time
                      ? secs * 1e6
                      : static_cast<double>(row.size.count()) / secs / 1e9 * plan::bus_factor(row.op, n);
  out.error = out.predicted / row.published - 1;
  out.within = std::fabs(out.error) <= row.tolerance;
  const auto& c = r.collectives.front();
  out.chosen = fmt::format("{}/{}/{}", plan::to_string(c.algorithm), plan::to_string(c.protocol), c.channels);
  return out;
}

std::string_view published_unit(const CollectiveStudyRow& row) {
  return row.published_is_time ? "us" : "GB/s busbw";
}

Json collective_study_json(const CollectiveStudy& s, const std::vector<CollectiveStudyResult>& results) {
  MESHSIM_ASSERT(results.size() == s.rows.size(), "one result per row");
  Json rows = Json::array();
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const CollectiveStudyRow& row = s.rows[i];
    const CollectiveStudyResult& r = results[i];
    rows.push_back(Json{{"name", row.name},
                        {"chosen", r.chosen},
                        {"unit", std::string(published_unit(row))},
                        {"predicted", r.predicted},
                        {"published", row.published},
                        {"error", r.error},
                        {"tolerance", row.tolerance},
                        {"within", r.within},
                        {"source", row.source}});
  }
  return Json{{"study", s.name}, {"rows", std::move(rows)}};
}

std::string collective_study_csv(const CollectiveStudy& s,
                                 const std::vector<CollectiveStudyResult>& results) {
  MESHSIM_ASSERT(results.size() == s.rows.size(), "one result per row");
  std::string csv = "name,op,size_bytes,chosen,unit,predicted,published,error,tolerance,within,source\n";
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const CollectiveStudyRow& row = s.rows[i];
    const CollectiveStudyResult& r = results[i];
    csv += fmt::format("{},{},{},{},{},{:.6g},{:.6g},{:.4f},{},{},{}\n", csv_quoted(row.name),
                       plan::to_string(row.op), row.size.count(), r.chosen, published_unit(row), r.predicted,
                       row.published, r.error, row.tolerance, r.within, csv_quoted(row.source));
  }
  return csv;
}

}  // namespace meshsim::planner
