// `meshsim compare`: one question over several topologies, fabrics or host
// counts, side by side. The command after the options is an ordinary
// meshsim command line in which --topology/-t, --hosts, --fabric,
// --nic-bandwidth and --routing may hold comma lists, and --vary KEY=V1,V2
// sets any other option to each value in turn; every combination is run
// (as a child process of this binary, with --json) and its headline
// figures go into one table, CSV/JSON and a chart.

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/json.h"
#include "core/json_writer.h"
#include "core/split.h"
#include "core/table.h"
#include "core/unit_strings.h"
#include "tools/cli/commands.h"
#include "tools/cli/cost_output.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/partial_file.h"
#include "tools/cli/progress.h"

namespace meshsim::cli {

namespace {

struct CompareArgs {
  std::vector<std::string> vary;  // KEY=V1,V2,... each
  std::string out;
  bool json = false;
  bool no_plots = false;
};

// The commands whose headline figures `figures` knows.
const std::vector<std::string> kCompared{"collective", "pipeline", "reshard", "simulate"};

// The options whose values may be lists, with the column each one names.
const std::vector<std::pair<std::vector<std::string>, std::string>> kVaried{
    {{"--topology", "-t"}, "topology"},
    {{"--hosts"}, "hosts"},
    {{"--fabric"}, "fabric"},
    {{"--nic-bandwidth"}, "nic"},
    {{"--routing"}, "routing"}};

struct Variant {
  std::vector<std::string> argv;                            // the command line to run
  std::vector<std::pair<std::string, std::string>> values;  // column -> value, for the varied options
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  for (std::string_view v : split_commas(s)) {
    if (v.empty()) throw UsageError(fmt::format("\"{}\": an empty item in a comma list", s));
    out.emplace_back(v);
  }
  return out;
}

// Every combination of the listed values, in command-line order (the last
// list varies fastest).
std::vector<Variant> expand(const std::vector<std::string>& cmd) {
  std::vector<Variant> out{Variant{{}, {}}};
  for (std::size_t i = 0; i < cmd.size(); ++i) {
    const std::string* column = nullptr;
    for (const auto& [names, col] : kVaried)
      if (std::find(names.begin(), names.end(), cmd[i]) != names.end()) column = &col;
    if (column == nullptr || i + 1 == cmd.size()) {
      for (auto& v : out) v.argv.push_back(cmd[i]);
      continue;
    }
    const auto values = split_list(cmd[++i]);
    std::vector<Variant> next;
    for (const auto& v : out)
      for (const auto& value : values) {
        Variant w = v;
        w.argv.insert(w.argv.end(), {cmd[i - 1], value});
        if (values.size() > 1) w.values.emplace_back(*column, value);
        next.push_back(std::move(w));
      }
    out = std::move(next);
  }
  return out;
}

// The most runs one compare may make: past this the grid is refused before any runs.
constexpr std::size_t kMaxRuns = 4096;

// One --vary KEY=V1,V2,...: the option (--KEY, underscores as dashes) and its values.
struct Vary {
  std::string option;
  std::string column;
  std::vector<std::string> values;
};

Vary parse_vary(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(fmt::format("--vary {}: expected KEY=V1,V2,... (e.g. oversubscription=1,2)", text));
  std::string key = text.substr(0, eq);
  while (key.starts_with("-")) key.erase(0, 1);
  if (key.empty() || !std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      }))
    throw UsageError(fmt::format("--vary {}: \"{}\" is not an option name", text, text.substr(0, eq)));
  std::replace(key.begin(), key.end(), '_', '-');
  return Vary{"--" + key, key, split_list(text.substr(eq + 1))};
}

// `argv` with option `option` set to `value`: its value replaced where the
// command line gives it (as "--opt v" or "--opt=v"), else appended.
std::vector<std::string> with_option(std::vector<std::string> argv, const std::string& option,
                                     const std::string& value) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == option && i + 1 < argv.size()) {
      argv[i + 1] = value;
      return argv;
    }
    if (argv[i].starts_with(option + "=")) {
      argv[i] = option + "=" + value;
      return argv;
    }
  }
  argv.insert(argv.end(), {option, value});
  return argv;
}

// Each variant once per value of each --vary, the last varying fastest.
std::vector<Variant> apply_varies(std::vector<Variant> variants, const std::vector<Vary>& varies) {
  for (const Vary& vary : varies) {
    std::vector<Variant> next;
    for (const Variant& v : variants)
      for (const std::string& value : vary.values) {
        Variant w{with_option(v.argv, vary.option, value), v.values};
        w.values.emplace_back(vary.column, value);
        next.push_back(std::move(w));
      }
    variants = std::move(next);
  }
  return variants;
}

// One output row: the variant's varied values, then the figures.
struct Row {
  std::vector<std::pair<std::string, std::string>> cells;
};

std::string seconds(double s) {
  return human_string(Time::from_seconds(s));
}

// A pipeline's cost per step ("-" without a price).
std::string cost_cell(const Json& cost) {
  const Json& usd = cost.at("usd_per_step");
  return usd.is_null() ? std::string("-") : dollars(usd.get<double>());
}

// The headline figures of one command's --json output, as rows.
std::vector<Row> figures(const std::string& command, const Json& j) {
  std::vector<Row> rows;
  if (command == "collective") {
    for (const Json& r : j.at("results"))
      rows.push_back(Row{
          {{"size", human_string(Bytes(r.at("size_bytes").get<std::int64_t>()))},
           {"time", seconds(r.at("time_s").get<double>())},
           {"busbw GB/s", fmt::format("{:.2f}", r.at("busbw_GBps").get<double>())},
           {"algorithm", r.at("algorithm").get<std::string>() + "/" + r.at("protocol").get<std::string>()}}});
  } else if (command == "pipeline") {
    Row row{{{"iteration", seconds(j.at("iteration_s").get<double>())},
             {"samples/s", fmt::format("{:.2f}", j.at("samples_per_s").get<double>())},
             {"TFLOP/s/GPU", fmt::format("{:.1f}", j.at("tflops_per_gpu").get<double>())},
             {"MFU", fmt::format("{:.1f} %", 100 * j.at("mfu").get<double>())},
             {"idle", fmt::format("{:.1f} %", 100 * j.at("idle_fraction").get<double>())},
             {"cost/step", cost_cell(j.at("cost"))},
             {"fits", std::all_of(j.at("memory").begin(), j.at("memory").end(),
                                  [](const Json& m) { return m.at("fits").get<bool>(); })
                          ? "yes"
                          : "NO"}}};
    if (j.contains("band"))  // --uncertainty
      row.cells.insert(
          row.cells.begin() + 1,
          {"band", fmt::format("{} to {}", seconds(j["band"]["fast"]["iteration_s"].get<double>()),
                               seconds(j["band"]["slow"]["iteration_s"].get<double>()))});
    rows.push_back(std::move(row));
  } else if (command == "reshard") {
    const std::string best = j.at("best").get<std::string>();
    double t = 0;
    for (const Json& s : j.at("strategies"))
      if (s.at("name").get<std::string>() == best && (t == 0 || s.at("time_s").get<double>() < t))
        t = s.at("time_s").get<double>();
    rows.push_back(Row{{{"best", best},
                        {"time", seconds(t)},
                        {"lower bound", seconds(j.at("lower_bound_s").get<double>())}}});
  } else {  // simulate
    rows.push_back(Row{{{"makespan", seconds(j.at("makespan_us").get<double>() * 1e-6)}}});
  }
  return rows;
}

// Runs one variant; UsageError with the child's message when it fails.
Json run_variant(const Variant& v) {
  std::vector<std::string> argv{"/proc/self/exe"};
  argv.insert(argv.end(), v.argv.begin(), v.argv.end());
  argv.push_back("--json");
  const Captured c = run_capturing(argv);
  if (c.status != 0) {
    std::string label;
    for (const auto& a : v.argv) label += (label.empty() ? "" : " ") + a;
    std::string err = c.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    throw UsageError(fmt::format("`meshsim {}` failed (exit {}): {}", label, c.status, err));
  }
  return parse_json_text(c.out, "the output of meshsim " + v.argv.front());
}

// results.json (--out) and --json: the runs' documents, an entry each,
// written as the runs end, never held together (a run's document may hold
// an object per task). Nothing is printed before the first run that
// succeeds: if none does, the command fails and prints no document.
class EntryWriter {
 public:
  EntryWriter(const std::string& dir, bool print) : print_(print) {
    if (dir.empty()) return;
    file_.emplace((std::filesystem::path(dir) / "results.json").string());
    to_file_.emplace(file_->stream());
  }
  void add(const Json& entry, bool ok) {
    if (to_file_) to_file_->add(entry);
    if (!print_) return;
    if (!to_stdout_) {
      if (!ok) {
        held_.push_back(entry);
        return;
      }
      to_stdout_.emplace(std::cout);
      for (const Json& h : held_) to_stdout_->add(h);
      held_.clear();
    }
    to_stdout_->add(entry);
  }
  // After at least one run succeeded.
  void finish() {
    if (to_file_) {
      to_file_->finish();
      file_->commit();
    }
    if (to_stdout_) {
      to_stdout_->finish();
      flush_stdout();
    }
  }

 private:
  bool print_;
  std::optional<PartialFile> file_;
  std::optional<JsonArrayWriter> to_file_;
  std::optional<JsonArrayWriter> to_stdout_;
  std::vector<Json> held_;  // failed runs' entries before the first that succeeded
};

void write_outputs(const std::string& dir, const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& cells, bool plots) {
  std::string csv;
  auto line = [&](const std::vector<std::string>& fields) {
    for (std::size_t k = 0; k < fields.size(); ++k) csv += (k ? "," : "") + csv_quoted(fields[k]);
    csv += "\n";
  };
  line(header);
  for (const auto& r : cells) line(r);
  const auto base = std::filesystem::path(dir);
  write_text_file((base / "results.csv").string(), csv);
  if (plots && run_plot_script("plot_compare.py", (base / "results.csv").string(), dir) != 0)
    fmt::print(stderr, "warning: the chart was not drawn (needs python3-matplotlib)\n");
}

void run_compare(const CompareArgs& a, const std::vector<std::string>& cmd) {
  if (cmd.empty())
    throw UsageError("give a command to compare, e.g. collective allreduce -t a.json,b.json ...");
  if (std::find(kCompared.begin(), kCompared.end(), cmd.front()) == kCompared.end())
    throw UsageError(fmt::format("compare runs {}, not \"{}\"", fmt::join(kCompared, ", "), cmd.front()));
  const std::string dir = prepare_output_dir(a.out, "--out");
  std::vector<Vary> varies;
  std::size_t runs = 1;
  for (const std::string& text : a.vary) {
    varies.push_back(parse_vary(text));
    runs *= varies.back().values.size();
    if (runs > kMaxRuns) break;
  }
  // The grid's size before it is built: lists in the command line multiply it too.
  for (std::size_t i = 0; i + 1 < cmd.size() && runs <= kMaxRuns; ++i)
    for (const auto& [names, col] : kVaried)
      if (std::find(names.begin(), names.end(), cmd[i]) != names.end())
        runs *= std::max<std::size_t>(1, split_commas(cmd[i + 1]).size());
  if (runs > kMaxRuns)
    throw UsageError(
        fmt::format("compare would make more than {} runs; vary fewer options or values", kMaxRuns));
  const std::vector<Variant> variants = apply_varies(expand(cmd), varies);
  auto progress = progress_reporter("compare", "runs", a.json);
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> cells;
  EntryWriter entries(dir, a.json);
  std::vector<std::string> failed;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    Json j;
    try {
      j = run_variant(v);
    } catch (const UsageError& e) {  // one variant the command refuses; the others still run
      failed.push_back(e.what());
      entries.add(Json{{"args", v.argv}, {"error", e.what()}}, false);
      progress(i + 1, variants.size());
      continue;
    }
    for (const Row& r : figures(cmd.front(), j)) {
      std::vector<std::pair<std::string, std::string>> all = v.values;
      all.insert(all.end(), r.cells.begin(), r.cells.end());
      if (header.empty())
        for (const auto& [k, value] : all) header.push_back(k);
      std::vector<std::string> row;
      for (const auto& [k, value] : all) row.push_back(value);
      cells.push_back(std::move(row));
    }
    entries.add(Json{{"args", v.argv}, {"result", std::move(j)}}, true);
    progress(i + 1, variants.size());
  }
  if (failed.size() == variants.size()) throw UsageError(failed.front());
  if (!dir.empty()) write_outputs(dir, header, cells, !a.no_plots);
  entries.finish();
  if (a.json) return;
  Table tab(header);
  for (const auto& r : cells) tab.add(r);
  std::vector<bool> right;  // figures right-aligned; names (variants, algorithms, strategies) left
  for (const auto& h : header)
    right.push_back(
        h != "algorithm" && h != "best" && h != "fits" &&
        std::none_of(kVaried.begin(), kVaried.end(), [&](const auto& v) { return v.second == h; }) &&
        std::none_of(varies.begin(), varies.end(), [&](const Vary& v) { return v.column == h; }));
  fmt::print("{}", tab.render(right));
  for (const auto& f : failed) fmt::print("not compared: {}\n", f);
  if (!dir.empty()) fmt::print("\nresults: {}\n", (std::filesystem::path(dir) / "results.csv").string());
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Run one command over several topologies, fabrics or host counts and compare them side by side");
  cmd->prefix_command();
  cmd->footer(
      "After the options comes an ordinary meshsim command line (collective, pipeline, reshard or\n"
      "simulate) in which --topology/-t, --hosts, --fabric, --nic-bandwidth and --routing may be comma\n"
      "lists, and --vary KEY=V1,V2 varies any other option; every combination runs and its headline\n"
      "figures (busbw per size; iteration time, MFU, cost per step and whether it fits; the best\n"
      "resharding; the makespan) fill one table. --out writes results.csv, results.json and\n"
      "compare.png (one panel per figure).\n"
      "Example: meshsim compare --out cmp/ collective allreduce -t dgx-h100 --hosts 16,64 \\\n"
      "           --fabric rail,fat-tree --sweep 1MiB:1GiB\n"
      "Example: meshsim compare --vary oversubscription=1,2 --vary placement=contiguous,random:1 \\\n"
      "           pipeline --model gpt3-13b -t dgx-h100 --hosts 16 --fabric fat-tree --tp 8 --pp 4 -m 16");
  cmd->add_option("--vary", a->vary,
                  "KEY=V1,V2,...: run the command once per value of its option --KEY (any option that "
                  "takes a value: oversubscription, placement, routing, tp, microbatches, ...); several "
                  "--vary make a grid, the last varying fastest")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--out", a->out, "Write results.csv, results.json and a chart into this directory");
  cmd->add_flag("--json", a->json, "Print one JSON document: every run's arguments and its own JSON output");
  cmd->add_flag("--no-plots", a->no_plots, "With --out, write no chart");
  cmd->callback([a, cmd] {
    warn_needless(*cmd, {{"--no-plots", "--out"}});
    run_compare(*a, cmd->remaining());
  });
}

}  // namespace meshsim::cli
