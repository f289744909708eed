#include "core/memory_limit.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"

namespace meshsim {

namespace {

constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();
std::atomic<std::int64_t> g_user_limit{0};

std::int64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return kUnlimited;
  return static_cast<std::int64_t>(pages) * page;
}

// A number from the first line of `path`; kUnlimited when the file is
// absent, says "max", or holds no number.
std::int64_t number_in(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return kUnlimited;
  std::int64_t v = 0;
  std::istringstream parse(word);
  if (!(parse >> v) || v <= 0) return kUnlimited;
  return v;
}

// The cgroup's memory limit: v2's memory.max, else v1's limit (which reads
// as a huge page-aligned number when unset).
std::int64_t cgroup_memory() {
  const std::int64_t v2 = number_in("/sys/fs/cgroup/memory.max");
  if (v2 != kUnlimited) return v2;
  const std::int64_t v1 = number_in("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  return v1 >= (std::int64_t{1} << 60) ? kUnlimited : v1;
}

// `Name:  N kB` of /proc/self/status in bytes; 0 when not found.
std::int64_t status_bytes(std::string_view name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(name) && line.size() > name.size() && line[name.size()] == ':') {
      std::istringstream parse(line.substr(name.size() + 1));
      std::int64_t kb = 0;
      if (parse >> kb) return kb * 1024;
    }
  return 0;
}

// What a resource limit leaves, less what the process uses of it now
// (`used`, a /proc/self/status field, read only when a limit is set: the
// search asks once per configuration); kUnlimited when none is set.
std::int64_t rlimit_left(int resource, std::string_view used) {
  rlimit r{};
  if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return kUnlimited;
  const auto cur = static_cast<std::int64_t>(std::min<rlim_t>(r.rlim_cur, kUnlimited));
  return std::max<std::int64_t>(0, cur - status_bytes(used));
}

}  // namespace

MemoryLimit memory_limit() {
  static const std::int64_t physical = physical_memory();
  static const std::int64_t cgroup = cgroup_memory();
  MemoryLimit m{physical, "this machine's physical memory"};
  auto lower = [&](std::int64_t bytes, const char* source) {
    if (bytes < m.bytes) m = {bytes, source};
  };
  lower(cgroup, "the cgroup's memory limit");
  lower(rlimit_left(RLIMIT_AS, "VmSize"), "what RLIMIT_AS (ulimit -v) leaves");
  lower(rlimit_left(RLIMIT_DATA, "VmData"), "what RLIMIT_DATA (ulimit -d) leaves");
  if (const std::int64_t user = g_user_limit.load(); user > 0) lower(user, "--max-memory");
  return m;
}

void set_memory_limit(std::int64_t bytes) {
  g_user_limit.store(std::max<std::int64_t>(0, bytes));
}

void require_memory(double bytes, std::string_view what, std::string_view lift) {
  const MemoryLimit limit = memory_limit();
  if (std::isfinite(bytes) && bytes <= static_cast<double>(limit.bytes)) return;
  const std::string need = std::isfinite(bytes) && bytes < 9.2e18
                               ? human_string(Bytes(static_cast<std::int64_t>(bytes)))
                               : fmt::format("{:.3g} B", bytes);
  throw UsageError(
      fmt::format("{} would need about {} of memory, more than the {} this process may use ({}); {}", what,
                  need, human_string(Bytes(limit.bytes)), limit.source, lift));
}

}  // namespace meshsim
