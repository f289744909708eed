#include "studies/collective_study.h"

#include <cmath>

#include <fmt/format.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/table.h"
#include "sim/executor.h"
#include "sim/ring_order.h"
#include "topology/topology_json.h"

namespace meshsim::studies {

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
    if (!p)
      v->fail(fmt::format("unknown routing \"{}\" (expected {})", v->as_string(),
                          topology::kRoutingPolicyNames.list()));
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

CollectiveStudy load_collective_study(const JsonCursor& root) {
  if (!root.is_object()) root.fail("a collective study is a JSON object");
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

Results collective_results(const CollectiveStudy& s, const std::vector<CollectiveStudyResult>& results) {
  MESHSIM_ASSERT(results.size() == s.rows.size(), "one result per row");
  Results out({{"name", CsvFormat::quoted},
               {"op", CsvFormat::plain, false},
               {"size_bytes", CsvFormat::plain, false},
               {"chosen"},
               {"unit"},
               {"predicted", CsvFormat::general6},
               {"published", CsvFormat::general6},
               {"error", CsvFormat::fixed4},
               {"tolerance"},
               {"within"},
               {"source", CsvFormat::quoted}});
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const CollectiveStudyRow& row = s.rows[i];
    const CollectiveStudyResult& r = results[i];
    out.add({row.name, std::string(plan::to_string(row.op)), row.size.count(), r.chosen,
             std::string(published_unit(row)), r.predicted, row.published, r.error, row.tolerance, r.within,
             row.source});
  }
  return out;
}

namespace {

class CollectiveStudyRun final : public Study {
 public:
  CollectiveStudyRun(CollectiveStudy s, std::string file) : s_(std::move(s)), file_(std::move(file)) {}

  Report run(const Context& /*c*/) const override {
    std::vector<CollectiveStudyResult> results;
    Table tab({"row", "chosen", "predicted", "published", "error", "within"});
    std::size_t outside = 0;
    for (const auto& row : s_.rows) {
      const auto& r = results.emplace_back(run_collective_row(row));
      outside += r.within ? 0 : 1;
      tab.add({row.name, r.chosen, fmt::format("{:.1f} {}", r.predicted, published_unit(row)),
               fmt::format("{:.1f}", row.published), fmt::format("{:+.1f} %", 100 * r.error),
               fmt::format("{} (±{:.0f} %)", r.within ? "yes" : "NO", 100 * row.tolerance)});
    }
    Report rep;
    rep.results = collective_results(s_, results);
    rep.document = Json{{"study", s_.name}, {"rows", rep.results.json()}};
    rep.printed_extra = Json{{"outside_tolerance", outside}};
    rep.text = fmt::format("{}: {}\n\n{}\n{} of {} rows within their tolerance\n", s_.name, s_.description,
                           tab.render({false, false, true, true, true, false}), s_.rows.size() - outside,
                           s_.rows.size());
    rep.files_line.shown = false;
    if (outside > 0)
      rep.failure = Failure{
          Failure::Kind::out_of_bounds,
          fmt::format("{} of {} rows of {} are outside their tolerance", outside, s_.rows.size(), file_)};
    return rep;
  }

 private:
  CollectiveStudy s_;
  std::string file_;
};

}  // namespace

std::unique_ptr<Study> collective_study_kind(const JsonCursor& root) {
  return std::make_unique<CollectiveStudyRun>(load_collective_study(root), root.file());
}

}  // namespace meshsim::studies
