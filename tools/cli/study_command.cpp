// `meshsim study FILE`: run a study file of any kind (studies/study.h) and
// write its report: the table view or --json, results.csv, results.json and
// its chart.

#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "studies/study.h"
#include "tools/cli/calibration_option.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_option.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/progress.h"

namespace meshsim::cli {

namespace {

struct StudyArgs {
  std::string file;
  CalibrationOption calibration;
  std::string out;
  bool json = false;
  bool no_plots = false;
};

// The line that names the files written, as the study's kind words it.
std::string files_line(const studies::FilesLine& f, const std::string& out, bool asked, bool drawn) {
  if (!f.shown || (f.only_with_charts && !asked)) return "";
  return fmt::format("{}results: {}/results.csv, results.json{}\n", f.blank_line_before ? "\n" : "", out,
                     !asked  ? ""
                     : drawn ? f.drawn
                             : f.not_drawn);
}

// Writes the report's files, draws its chart and prints it (the table view
// or one JSON document); then fails as the study says.
void write_report(const StudyArgs& a, const studies::Report& r) {
  bool drawn = false;
  const bool charts = !a.out.empty() && !a.no_plots && r.chart.has_value();
  if (!a.out.empty()) {
    write_text_file(a.out + "/results.csv", r.results.csv());
    write_text_file(a.out + "/results.json", dump_json(r.document));
    if (charts) drawn = draw_study_chart(r.chart->script, r.chart->data, a.out);
  }
  if (a.json) {
    Json doc = r.document;
    if (r.printed_extra.is_object()) doc.update(r.printed_extra);
    fmt::print("{}", dump_json(doc));
  } else {
    fmt::print("{}", r.text);
    if (!a.out.empty()) fmt::print("{}", files_line(r.files_line, a.out, charts, drawn));
  }
  if (!r.failure) return;
  if (r.failure->kind == studies::Failure::Kind::not_verified) throw VerificationFailed(r.failure->message);
  throw UsageError(r.failure->message);
}

void run_study(StudyArgs& a) {
  const studies::StudyFile f = studies::read_study_file(a.file);
  if (!f.kind->refuses_calibration.empty() && !a.calibration.file.empty())
    throw UsageError(fmt::format("{}: --calibration does not apply", f.kind->refuses_calibration));
  const std::unique_ptr<studies::Study> study = studies::load(f, a.file);
  a.out = prepare_output_dir(a.out, "--out");  // before the run, not after
  studies::Context c;
  c.calibration = a.calibration.get();
  c.calibration_file = a.calibration.file;
  c.profiles = &bundled_profiles();
  c.progress = [&](const std::string& label, const std::string& unit) {
    return progress_reporter(label, unit, a.json);
  };
  if (!a.json) c.note = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  c.load_model = load_model_arg;  // a file beside the study, or a bundled model's name
  write_report(a, study->run(c));
}

// "meshsim.study/1 (resharding: ...), ... or meshsim.fidelity/1 (...)".
std::string kinds_help() {
  std::string out;
  std::vector<const studies::Kind*> run;
  for (const studies::Kind& k : studies::kinds())
    if (k.load != nullptr) run.push_back(&k);
  for (std::size_t i = 0; i < run.size(); ++i)
    out += fmt::format("{}{} ({})",
                       i == 0                ? ""
                       : i + 1 == run.size() ? " or "
                                             : ", ",
                       run[i]->format, run[i]->description);
  return out;
}

}  // namespace

void add_study_command(CLI::App& app) {
  auto a = std::make_shared<StudyArgs>();
  auto* cmd = app.add_subcommand("study", "Run a study file: " + kinds_help());
  cmd->add_option("file", a->file, "Study file, e.g. configs/studies/alpa-microbench.json")->required();
  a->calibration.add_to(*cmd);
  cmd->footer(
      "--calibration applies to resharding and pipeline studies, which run on the machine the study\n"
      "names; collective, redistribution and fidelity studies compare preset or published machines\n"
      "and refuse it.");
  cmd->add_option("--out", a->out,
                  "Directory for results.csv, results.json and, for resharding, redistribution and fidelity "
                  "studies, PNG charts");
  cmd->add_flag("--no-plots", a->no_plots, "Do not draw the charts");
  cmd->add_flag("--json", a->json, "Print one JSON document instead of tables");
  cmd->callback([a, cmd] {
    warn_needless(*cmd, {{"--no-plots", "--out"}});
    run_study(*a);
  });
}

}  // namespace meshsim::cli
