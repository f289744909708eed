#include "tools/cli/output.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <ostream>
#include <spawn.h>
#include <streambuf>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"
#include "core/unit_strings.h"
#include "tools/cli/partial_file.h"

namespace meshsim::cli {

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

namespace {

// Runs `argv` with its standard output and error on `out_fd` and `err_fd`
// (-1: /dev/null) and waits for it: its exit status, or -1 when it could
// not start or died of a signal.
int spawn_and_wait(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  if (argv.empty()) return -1;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  for (const auto& [fd, target] : {std::pair{out_fd, STDOUT_FILENO}, {err_fd, STDERR_FILENO}}) {
    if (fd >= 0)
      posix_spawn_file_actions_adddup2(&io, fd, target);
    else
      posix_spawn_file_actions_addopen(&io, target, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, args[0], &io, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&io);
  if (started != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int run_quietly(const std::vector<std::string>& argv) {
  return spawn_and_wait(argv, -1, -1);
}

std::filesystem::path temp_folder() {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (!ec) return dir;
  const char* tmpdir = std::getenv("TMPDIR");
  throw UsageError(
      fmt::format("the temporary folder ({}) cannot be used: {}; set TMPDIR to a folder meshsim may "
                  "write to",
                  tmpdir != nullptr ? fmt::format("TMPDIR={}", tmpdir) : "/tmp", ec.message()));
}

Captured run_capturing(const std::vector<std::string>& argv, const std::filesystem::path& folder) {
  Captured c;
  std::string out_name = (folder / "meshsim-child-out-XXXXXX").string();
  std::string err_name = (folder / "meshsim-child-err-XXXXXX").string();
  const int out_fd = mkstemp(out_name.data());
  const int err_fd = mkstemp(err_name.data());
  if (out_fd >= 0 && err_fd >= 0) {
    c.status = spawn_and_wait(argv, out_fd, err_fd);
    auto slurp = [](const std::string& name) {
      std::ifstream in(name, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    c.out = slurp(out_name);
    c.err = slurp(err_name);
  }
  for (const auto& [fd, name] : {std::pair{out_fd, &out_name}, {err_fd, &err_name}})
    if (fd >= 0) {
      close(fd);
      std::remove(name->c_str());
    }
  return c;
}

Captured run_capturing(const std::vector<std::string>& argv) {
  return run_capturing(argv, temp_folder());
}

namespace {

// The command line that runs tools/<script> (see run_plot_script).
std::vector<std::string> plot_command(const std::string& script, const std::string& csv,
                                      const std::string& out_dir, const std::vector<std::string>& extra) {
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  return with({python, std::string(MESHSIM_SOURCE_DIR) + "/tools/" + script, csv, out_dir}, extra);
}

// Why a plotting script failed, from what it printed: matplotlib missing
// (or no python3 to run it), else the script's last line of error.
std::string plot_failure(const Captured& c) {
  if (c.status == -1 || c.err.find("No module named 'matplotlib'") != std::string::npos)
    return "needs python3-matplotlib";
  std::string_view err = c.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.remove_suffix(1);
  const std::size_t line = err.rfind('\n');
  return std::string(line == std::string_view::npos ? err : err.substr(line + 1));
}

}  // namespace

int run_plot_script(const std::string& script, const std::string& csv, const std::string& out_dir,
                    const std::vector<std::string>& extra) {
  return run_quietly(plot_command(script, csv, out_dir, extra));
}

namespace {

// A folder of the temporary directory only this process can have made
// (mkdtemp: a fresh name, mode 0700), removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    const std::filesystem::path tmp = temp_folder();
    std::string name = (tmp / "meshsim-chart-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr)
      throw UsageError(
          fmt::format("cannot make a scratch folder for a chart in {}: {}; set TMPDIR to a folder "
                      "meshsim may write to",
                      tmp.string(), std::strerror(errno)));
    path_ = name;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    try {  // remove_all builds paths: it may allocate, even with an error_code
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    } catch (...) {  // the folder is left behind; nothing may leave a destructor
    }
  }
  [[nodiscard]] std::string file(const char* name) const { return (path_ / name).string(); }
  [[nodiscard]] std::string str() const { return path_.string(); }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

void draw_chart(const std::string& script, const std::string& csv, const std::vector<std::string>& args,
                const std::string& png) {
  const ScratchDir dir;
  write_text_file(dir.file("data.csv"), csv);
  const Captured c = run_capturing(plot_command(script, dir.file("data.csv"), dir.str(), args), dir.path());
  if (c.status != 0)
    throw UsageError(fmt::format("--plot {}: the chart was not drawn: {}", png, plot_failure(c)));
}

bool draw_study_chart(const std::string& script, const std::string& data, const std::string& out_dir) {
  const ScratchDir dir;
  write_text_file(dir.file("data.csv"), data);
  return run_plot_script(script, dir.file("data.csv"), out_dir) == 0;
}

void require_verifiable(const plan::Tensor& t) {
  if (static_cast<double>(t.bytes().count() / plan::dtype_size(t.dtype)) > 64e6)
    throw UsageError("--verify holds every element on the host: use a tensor of at most 64M elements");
}

std::string prepare_output_dir(std::string dir, std::string_view option) {
  if (dir.empty()) return dir;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();  // "out/" names out: files are out/x, not out//x
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UsageError(fmt::format("{} {}: cannot create the directory ({})", option, dir, ec.message()));
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError(fmt::format("{} {}: not a directory", option, dir));
  if (access(dir.c_str(), W_OK) != 0)
    throw UsageError(fmt::format("{} {}: not writable ({})", option, dir, std::strerror(errno)));
  return dir;
}

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        if (path.empty()) return "an empty file name";
        if (fs::is_directory(path, ec)) return fmt::format("{} is a directory; name a file to write", path);
        const fs::path parent =
            fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
        if (!fs::is_directory(parent, ec))
          return fmt::format("no directory {} to write {} in", parent.string(), path);
        if (access(parent.c_str(), W_OK) != 0)
          return fmt::format("cannot write in {} ({})", parent.string(), std::strerror(errno));
        return {};
      },
      "FILE", "output");
}

void flush_stdout() {
  errno = 0;
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0)
    throw UsageError(errno != 0 ? fmt::format("error writing the standard output: {}", std::strerror(errno))
                                : std::string("error writing the standard output"));
}

void write_stdout(const std::function<void(std::ostream&)>& write) {
  std::fflush(stdout);  // what fmt::print left in stdio's buffer goes first
  write(std::cout);
  flush_stdout();
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file(path, [&](std::ostream& out) { out << text; });
}

namespace {

// A device or pipe (/dev/stdout, /dev/null): written in place, not through
// a partial file, and never read back.
bool written_in_place(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  return !ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
}

void write_in_place(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UsageError(fmt::format("cannot write \"{}\"", path));
  write(out);
  if (!out.flush()) throw UsageError(fmt::format("error writing \"{}\"", path));
}

// Whole or not at all (tools/cli/partial_file.h).
void write_whole(const std::string& path, const std::function<void(std::ostream&)>& write) {
  PartialFile file(path);
  write(file.stream());
  file.commit();
}

}  // namespace

void write_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (written_in_place(path))
    write_in_place(path, write);
  else
    write_whole(path, write);
}

namespace {

// Passes what is written to `to` until `cap` bytes, then only counts: a
// file that will not be kept costs no more disk than the cap.
class CappedBuffer : public std::streambuf {
 public:
  CappedBuffer(std::streambuf* to, std::uintmax_t cap) : to_(to), cap_(cap) {}
  [[nodiscard]] std::uintmax_t count() const { return count_; }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto size = static_cast<std::uintmax_t>(n);
    if (count_ + size <= cap_ && to_->sputn(s, n) != n) return 0;  // the file's error
    count_ += size;
    return n;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  int sync() override { return to_->pubsync(); }

 private:
  std::streambuf* to_;
  std::uintmax_t cap_;
  std::uintmax_t count_ = 0;
};

}  // namespace

void write_input_file(const std::string& path, const std::function<void(std::ostream&)>& write,
                      std::string_view smaller) {
  if (written_in_place(path)) {  // nothing reads it back
    write_in_place(path, write);
    return;
  }
  write_whole(path, [&](std::ostream& out) {
    CappedBuffer capped(out.rdbuf(), kMaxInputFileBytes);
    std::ostream counted(&capped);
    write(counted);
    if (!counted) out.setstate(std::ios::badbit);  // the file's own error, reported by write_file
    const std::uintmax_t bytes = capped.count();
    if (bytes > kMaxInputFileBytes)
      throw UsageError(
          fmt::format("{} would be {}, more than the {} meshsim reads back (docs/limits.md), so "
                      "it is not written: {}",
                      path, human_string(Bytes(static_cast<std::int64_t>(bytes))),
                      human_string(Bytes(static_cast<std::int64_t>(kMaxInputFileBytes))), smaller));
  });
}

}  // namespace meshsim::cli
