#include "studies/study.h"

#include <fmt/format.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/input_file.h"
#include "hardware/hosts.h"
#include "topology/cluster.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

namespace meshsim::studies {

std::string file_beside(const std::string& file, const JsonCursor& c, std::string_view what) {
  std::string path = resolve_beside(file, c.as_name());
  if (path_kind(path) != PathKind::file) c.fail(fmt::format("no {} file {}", what, path));
  return path;
}

topology::Topology load_study_topology(const std::string& what) {
  if (hardware::find_host_preset(what) != nullptr) {
    topology::ClusterSpec spec;
    spec.host_preset = what;
    return topology::build_cluster(spec);
  }
  return topology::load_topology_file(what);
}

ComputeSetting compute_setting(const std::string& file, const JsonCursor& c) {
  ComputeSetting s;
  if (auto e = c.find("compute_efficiency")) {
    const double v = e->as_number();
    if (!(v > 0 && v <= 1)) e->fail("must be in (0, 1]");
    s.efficiency = v;
  }
  if (auto cal = c.find("calibration")) {
    if (s.efficiency) cal->fail("give a calibration or a compute_efficiency, not both");
    s.calibration = file_beside(file, *cal, "calibration");
  }
  return s;
}

void Results::add(std::vector<Cell> row) {
  MESHSIM_ASSERT(row.size() == columns_.size(), "a results row has one cell per column");
  rows_.push_back(std::move(row));
}

namespace {

// A cell as results.csv writes it under format `f`.
std::string csv_cell(const Cell& cell, CsvFormat f) {
  if (std::holds_alternative<std::monostate>(cell)) return "";
  if (const auto* s = std::get_if<std::string>(&cell)) return f == CsvFormat::quoted ? csv_quoted(*s) : *s;
  if (const auto* b = std::get_if<bool>(&cell)) return fmt::format("{}", *b);
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return fmt::format("{}", *i);
  MESHSIM_ASSERT(std::holds_alternative<double>(cell), "a CSV cell is text, a number or a truth");
  const double d = std::get<double>(cell);
  switch (f) {
    case CsvFormat::general6: return fmt::format("{:.6g}", d);
    case CsvFormat::general9: return fmt::format("{:.9g}", d);
    case CsvFormat::fixed0: return fmt::format("{:.0f}", d);
    case CsvFormat::fixed4: return fmt::format("{:.4f}", d);
    case CsvFormat::none:
    case CsvFormat::plain:
    case CsvFormat::quoted: break;
  }
  return fmt::format("{}", d);
}

Json json_cell(const Cell& cell) {
  return std::visit(
      [](const auto& v) -> Json {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>)
          return nullptr;
        else
          return Json(v);
      },
      cell);
}

}  // namespace

std::string Results::csv() const {
  std::string out;
  const auto line = [&](auto&& cell_of) {
    bool first = true;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (columns_[c].csv == CsvFormat::none) continue;
      out += first ? "" : ",";
      out += cell_of(c);
      first = false;
    }
    out += "\n";
  };
  line([&](std::size_t c) { return columns_[c].name; });
  for (const auto& row : rows_) line([&](std::size_t c) { return csv_cell(row[c], columns_[c].csv); });
  return out;
}

Json Results::json() const {
  Json out = Json::array();
  for (const auto& row : rows_) {
    Json o = Json::object();
    for (std::size_t c = 0; c < columns_.size(); ++c)
      if (columns_[c].json && !std::holds_alternative<std::monostate>(row[c]))
        o[columns_[c].name] = json_cell(row[c]);
    out.push_back(std::move(o));
  }
  return out;
}

namespace {

// The formats `meshsim study` reads, for messages: "a, b and c".
std::string format_list() {
  std::vector<std::string_view> names;
  for (const Kind& k : kinds())
    if (k.load != nullptr) names.push_back(k.format);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " and " : ", ", names[i]);
  return out;
}

}  // namespace

StudyFile read_study_file(const std::string& file) {
  StudyFile f{read_json_file(file), nullptr};
  const JsonCursor root(f.document, file);
  if (!f.document.is_object()) root.fail("a study is a JSON object");
  const JsonCursor format = root["format"];
  for (const Kind& k : kinds())
    if (format.as_string() == k.format) f.kind = &k;
  if (f.kind == nullptr)
    format.fail(fmt::format("unsupported format \"{}\" (meshsim study reads {}; docs/study-format.md)",
                            format.as_string(), format_list()));
  if (f.kind->load == nullptr)  // a kind another command runs
    throw UsageError(fmt::format("{} is {}: run `{} {}`", file, f.kind->description, f.kind->run_by, file));
  return f;
}

std::unique_ptr<Study> load(const StudyFile& f, const std::string& file) {
  MESHSIM_ASSERT(f.kind != nullptr && f.kind->load != nullptr, "a study file of a kind `study` runs");
  return f.kind->load(JsonCursor(f.document, file));
}

}  // namespace meshsim::studies
