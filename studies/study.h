#pragma once
// Studies: files that run many cases and report them (`meshsim study FILE`).
// Every kind is one entry of the registry (studies/registry.cpp), keyed by
// the file's "format": the file is read and parsed once, its kind found,
// loaded from the parsed document and run, and every kind reports in one
// shape (Report), which one writer turns into the table view, results.csv,
// results.json and charts.
//
//   Results   the rows: named columns of typed cells. results.csv writes
//             each column its CsvFormat gives it, in column order; each row
//             of results.json is an object of the columns marked json, in
//             column order, an empty cell leaving its key out. A column may
//             be in one file only (a CSV's ratio beside a JSON's array).
//   Report    the Results, the JSON document they sit in (the kind's own
//             fields around them), the table view, a chart to draw, how the
//             table view names the files written, and whether the study
//             passed (a report may fail: a row outside its tolerance).
//
// Adding a kind: a loader (parsed file → Study) and Study::run, and its
// entry in the registry.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/json.h"
#include "model/model.h"
#include "plan/calibration.h"
#include "sim/profiles.h"
#include "topology/topology.h"

namespace meshsim::studies {

/// Cases (rows) one study file may hold, of any study format (docs/limits.md).
inline constexpr std::size_t kMaxStudyCases = 10'000;

/// The file a study names at `c` (a JSON string), resolved beside the study
/// `file`; fails at `c` ("no calibration file …", with `what`) when there is
/// no such file.
[[nodiscard]] std::string file_beside(const std::string& file, const JsonCursor& c, std::string_view what);

/// A study's topology: a host preset name (one host), else a topology file.
[[nodiscard]] topology::Topology load_study_topology(const std::string& what);

/// How a study's GPUs compute: "compute_efficiency" (a fraction of the
/// peak, in (0, 1]) or "calibration" (a file beside the study `file`), at
/// most one of them, members of `c`; neither: the built-in models.
struct ComputeSetting {
  std::optional<double> efficiency;
  std::string calibration;  // resolved path; empty: none
};
[[nodiscard]] ComputeSetting compute_setting(const std::string& file, const JsonCursor& c);

/// The study in `file`, read by a kind's loader (a study another one
/// names, a test's): `load(JsonCursor)`.
template <typename Loader>
[[nodiscard]] auto load_study_file(const std::string& file, Loader load) {
  const Json doc = read_json_file(file);
  return load(JsonCursor(doc, file));
}

/// How results.csv writes a column's cells (an empty cell: nothing).
enum class CsvFormat : std::uint8_t {
  none,      // not in results.csv
  plain,     // as fmt's "{}": text as is, integers, shortest doubles, true/false
  quoted,    // text as one quoted cell (core/csv.h)
  general6,  // "{:.6g}"
  general9,  // "{:.9g}"
  fixed0,    // "{:.0f}"
  fixed4,    // "{:.4f}"
};

struct Column {
  std::string name;
  CsvFormat csv = CsvFormat::plain;
  bool json = true;  // in each row of results.json
};

/// A cell: empty, text, a number (an integer stays one in JSON), a truth,
/// or a JSON value (results.json only: a list, or null).
using Cell = std::variant<std::monostate, std::string, double, std::int64_t, bool, Json>;

class Results {
 public:
  explicit Results(std::vector<Column> columns) : columns_(std::move(columns)) {}
  /// InternalError unless `row` has one cell per column.
  void add(std::vector<Cell> row);
  [[nodiscard]] const std::vector<Column>& columns() const { return columns_; }
  [[nodiscard]] std::size_t size() const { return rows_.size(); }

  /// results.csv: the header, then one line per row.
  [[nodiscard]] std::string csv() const;
  /// The rows of results.json: one object per row.
  [[nodiscard]] Json json() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

/// A chart drawn by a plotting script (tools/<script>) from `data`, a CSV
/// the study made for it, into the output folder: `script DATA OUT_DIR`.
struct Chart {
  std::string script;
  std::string data;
};

/// How the table view ends once results.csv and results.json are written:
/// "results: OUT/results.csv, results.json" and what the chart added.
struct FilesLine {
  bool shown = true;
  bool blank_line_before = true;
  bool only_with_charts = false;  // not shown under --no-plots
  std::string drawn;              // ", fidelity.png"
  std::string not_drawn;          // " (plot skipped: python3-matplotlib missing?)"
};

/// Why a study failed, after its report was written and printed.
struct Failure {
  enum class Kind : std::uint8_t { out_of_bounds, not_verified };
  Kind kind = Kind::out_of_bounds;  // exit 2 (a usage error) or 1 (a byte did not verify)
  std::string message;
};

struct Report {
  Results results{{}};
  Json document;       // results.json, with results.json() inside it
  Json printed_extra;  // fields --json prints after the document's (an object, or null)
  std::string text;    // the table view
  std::optional<Chart> chart;
  FilesLine files_line;
  std::optional<Failure> failure;
};

/// What a study may use from the command that runs it.
struct Context {
  /// --calibration, loaded (nullptr: none) and its file, for the kinds that take one.
  const plan::Calibration* calibration = nullptr;
  std::string calibration_file;
  /// The device profiles GPU models compute at (sim/profiles.h), for the
  /// kinds that time compute; nullptr: the datasheet roofline.
  const std::vector<sim::LoadedProfile>* profiles = nullptr;
  /// A progress callback (done, total) for a label and unit ("cases"); may
  /// return an empty function.
  std::function<std::function<void(std::size_t, std::size_t)>(const std::string& label,
                                                              const std::string& unit)>
      progress;
  /// A line saying what runs next (stderr); may be empty.
  std::function<void(const std::string&)> note;
  /// Reads a model a study names (a file, or what the caller's resolver
  /// accepts, such as a bundled model's name); empty: model::load_model_file.
  std::function<model::Model(const std::string&)> load_model;

  /// progress(label, unit), or an empty callback when there is none.
  [[nodiscard]] std::function<void(std::size_t, std::size_t)> progress_of(const std::string& label,
                                                                          const std::string& unit) const {
    return progress ? progress(label, unit) : nullptr;
  }
};

class Study {
 public:
  virtual ~Study() = default;
  [[nodiscard]] virtual Report run(const Context& c) const = 0;
};

/// One kind of study file.
struct Kind {
  std::string_view format;       // "meshsim.pipeline-study/1"
  std::string_view description;  // what it runs, for --help
  /// Why it refuses --calibration (its machines are not the one measured);
  /// empty: it applies one.
  std::string_view refuses_calibration;
  /// The study of a parsed file (root: the document and the file's name);
  /// ConfigError with the JSON path on any mistake. nullptr: a file another
  /// command runs (`run_by`).
  std::unique_ptr<Study> (*load)(const JsonCursor& root);
  std::string_view run_by;
};

/// Every kind, in the order messages list them.
[[nodiscard]] const std::vector<Kind>& kinds();

/// A study file's kind, with the file parsed once.
struct StudyFile {
  Json document;
  const Kind* kind = nullptr;
};
/// Reads `file` and finds its kind by "format". ConfigError naming the file
/// (and "format") for a file that is no JSON object or of a format no kind
/// reads; UsageError for a search space (`meshsim search` runs those).
[[nodiscard]] StudyFile read_study_file(const std::string& file);
/// The study of `f` (its kind's loader).
[[nodiscard]] std::unique_ptr<Study> load(const StudyFile& f, const std::string& file);

}  // namespace meshsim::studies
