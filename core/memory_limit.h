#pragma once
// How much memory this process may use, and the refusal of work whose
// estimate needs more: checked before the work allocates, so that a run too
// large for the machine ends at once with its figure (exit 2) instead of
// failing part-way through with std::bad_alloc, or being killed.
//
// The limit is the least of:
//   - the machine's physical memory;
//   - RLIMIT_AS and RLIMIT_DATA (`ulimit -v`, `ulimit -d`), less the
//     address space this process already maps;
//   - the memory limit of the process's cgroup (v2 `memory.max`, v1
//     `memory.limit_in_bytes`), as a container or a batch system sets it;
//   - set_memory_limit()'s value (the command line's --max-memory).
// Physical memory and the cgroup's limit are read once; the address-space
// limit is read at every call (a thread's stack counts against it).

#include <cstdint>
#include <string>
#include <string_view>

namespace meshsim {

/// The memory this process may still allocate, and what sets it.
struct MemoryLimit {
  std::int64_t bytes = 0;  // INT64_MAX: no limit could be read
  std::string source;      // "physical memory", "RLIMIT_AS (ulimit -v)", ...
};

[[nodiscard]] MemoryLimit memory_limit();

/// A limit of the user's own (the --max-memory option), below the others;
/// 0 removes it.
void set_memory_limit(std::int64_t bytes);

/// UsageError when `bytes`, an estimate of the memory `what` needs, exceed
/// memory_limit(): the message gives the estimate, the limit and what sets
/// it, and `lift`, how to ask for less (or how to raise the limit).
/// NaN, infinities and estimates past 2^63 are refused as too large.
void require_memory(double bytes, std::string_view what, std::string_view lift);

}  // namespace meshsim
