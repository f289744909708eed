#pragma once
// Writing the files the CLI produces (plans, traces, CSV, JSON).

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "plan/plan.h"
#include "sim/executor.h"
#include "topology/topology.h"

namespace meshsim::cli {

/// `a` followed by `b`: an option's names with extra choices ("auto", "all").
[[nodiscard]] std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b);

/// Runs `argv` (argv[0] looked up on PATH unless it has a '/') with its
/// output discarded, and returns its exit status (-1 when it could not start
/// or died of a signal). No shell sees the arguments, so any path is safe.
[[nodiscard]] int run_quietly(const std::vector<std::string>& argv);
/// What a child process printed, and its exit status as run_quietly's.
struct Captured {
  int status = -1;
  std::string out;
  std::string err;
};
/// Runs `argv` as run_quietly does, keeping its standard output and error
/// (in files of `folder` while it runs; by default temp_folder()).
[[nodiscard]] Captured run_capturing(const std::vector<std::string>& argv);
[[nodiscard]] Captured run_capturing(const std::vector<std::string>& argv,
                                     const std::filesystem::path& folder);
/// The temporary folder (TMPDIR, else /tmp); UsageError naming it when it
/// is missing or not a folder.
[[nodiscard]] std::filesystem::path temp_folder();
/// Runs the plotting script tools/<script> on `csv`, writing its charts to
/// `out_dir`, with Debian's /usr/bin/python3 (python3-matplotlib belongs
/// to it; a pyenv or venv python3 earlier on PATH would not see it), else
/// the python3 on PATH. Its exit status as run_quietly's.
[[nodiscard]] int run_plot_script(const std::string& script, const std::string& csv,
                                  const std::string& out_dir, const std::vector<std::string>& extra = {});
/// Writes `csv` to a scratch folder and runs tools/<script> on it with
/// `args` after the CSV and the folder (the chart's path among them);
/// UsageError naming `--plot PNG` when the chart was not drawn.
void draw_chart(const std::string& script, const std::string& csv, const std::vector<std::string>& args,
                const std::string& png);
/// A study's chart (studies/study.h): tools/<script> on `data` (written to a
/// scratch folder), drawing into `out_dir`; whether it was drawn.
[[nodiscard]] bool draw_study_chart(const std::string& script, const std::string& data,
                                    const std::string& out_dir);

/// UsageError when `--verify` would hold more of `t` on the host than the
/// commands allow (64M elements).
void require_verifiable(const plan::Tensor& t);

/// Flushes what was written to std::cout (and stdout); UsageError when the
/// standard output could not take it (a full disk, a closed pipe).
void flush_stdout();
/// Lets `write` fill the standard output (after what fmt::print left in
/// stdio's buffer), then flush_stdout().
void write_stdout(const std::function<void(std::ostream&)>& write);

/// Writes `text` to `path`; UsageError naming the path when it cannot. The
/// file appears whole or not at all: it is written beside `path` and
/// renamed into place (devices and pipes such as /dev/stdout are written
/// directly).
void write_text_file(const std::string& path, const std::string& text);
/// Creates the output directory `dir` named by `option` ("--out") before any
/// work, so that a bad one fails at once: UsageError when it cannot be
/// created, is not a directory or is not writable. Nothing for "". Returns
/// the directory without trailing slashes, the form to join names onto.
[[nodiscard]] std::string prepare_output_dir(std::string dir, std::string_view option);
/// A CLI11 check for an option that names a file to write (--trace,
/// --plan-out, --csv, ...), run while the command line is parsed, before any
/// work: the path is not a directory and its directory exists and is
/// writable.
[[nodiscard]] CLI::Validator output_file();
/// Opens `path` and lets `write` fill it, the same way (whole or not at
/// all; an exception from `write` leaves no file behind).
void write_file(const std::string& path, const std::function<void(std::ostream&)>& write);
/// write_file for a file meshsim reads back (a plan, a topology): one past
/// the input limit (kMaxInputFileBytes) is not written, UsageError naming
/// its size and `smaller`, how to make it smaller. Past the limit the text
/// is only counted, not stored.
void write_input_file(const std::string& path, const std::function<void(std::ostream&)>& write,
                      std::string_view smaller);

}  // namespace meshsim::cli
