#include "tools/cli/partial_file.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <fstream>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::cli {

namespace {

// The partial files being written, for the signal handler: each slot holds
// a file name (owned by its PartialFile) or null.
constexpr std::size_t kSlots = 64;
std::array<std::atomic<const char*>, kSlots> g_partial{};

extern "C" void remove_partial_files(int sig) {
  for (auto& slot : g_partial)
    if (const char* name = slot.load()) ::unlink(name);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Installs the handler for each signal whose disposition is the default
// (an ignored signal stays ignored; a caller's own handler stays).
void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction act {};
      act.sa_handler = remove_partial_files;
      sigemptyset(&act.sa_mask);
      sigaction(sig, &act, nullptr);
    }
  });
}

std::size_t list(const char* name) {
  for (std::size_t i = 0; i < kSlots; ++i) {
    const char* none = nullptr;
    if (g_partial[i].compare_exchange_strong(none, name)) return i;
  }
  return kSlots;  // more at once than listed: this one is not removed on a signal
}

// The process's umask, read once. /proc/self/status states it without
// changing it (Linux 4.7 on); elsewhere it is set and put back, a moment in
// which another thread creating a file would get 022.
mode_t umask_now() {
  static const mode_t mask = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
    const mode_t m = ::umask(022);
    ::umask(m);
    return m;
  }();
  return mask;
}

}  // namespace

struct PartialFile::Impl {
  std::string target;
  std::string name;
  std::size_t slot = kSlots;
  std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> buf;
  std::unique_ptr<std::ostream> out;
  bool committed = false;
};

PartialFile::PartialFile(std::string target) : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  p.target = std::move(target);
  p.name = p.target + ".part-XXXXXX";
  install_handlers();
  const int fd = ::mkstemp(p.name.data());
  if (fd < 0) throw UsageError(fmt::format("cannot write \"{}\": {}", p.target, std::strerror(errno)));
  p.slot = list(p.name.c_str());
  try {
    p.buf = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd, std::ios::out | std::ios::binary);
    p.out = std::make_unique<std::ostream>(p.buf.get());
  } catch (...) {  // (the destructor will not run)
    if (!p.buf) ::close(fd);
    ::unlink(p.name.c_str());
    if (p.slot < kSlots) g_partial[p.slot].store(nullptr);
    throw;
  }
}

PartialFile::~PartialFile() {
  Impl& p = *impl_;
  p.out.reset();
  p.buf.reset();  // closes the descriptor
  if (!p.committed) ::unlink(p.name.c_str());
  if (p.slot < kSlots) g_partial[p.slot].store(nullptr);
}

std::ostream& PartialFile::stream() {
  return *impl_->out;
}

void PartialFile::commit() {
  Impl& p = *impl_;
  if (!p.out->flush() || p.buf->close() == nullptr)
    throw UsageError(fmt::format("error writing \"{}\"", p.target));
  if (::chmod(p.name.c_str(), 0666 & ~umask_now()) != 0 || std::rename(p.name.c_str(), p.target.c_str()) != 0)
    throw UsageError(fmt::format("cannot write \"{}\": {}", p.target, std::strerror(errno)));
  p.committed = true;
}

}  // namespace meshsim::cli
