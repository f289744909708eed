#pragma once
// nccl-tests output (all_reduce_perf and friends), the figure every cluster
// owner has: read, and written from a prediction in the same layout.
//
// What is read: the test's name ("# Collective test starting: X", or the
// file's name when it starts with one, as older versions print none); the
// "#  Rank  r Group  g Pid p on HOST device d [bus] GPU" lines, which say
// where each rank ran; and every data row
//
//   size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong
//
// (out-of-place, then in-place; times in microseconds, bandwidths in GB/s;
// size is nccl-tests' max(send, recv) bytes: all-gather's whole output,
// reduce-scatter's whole input). Other lines (NCCL INFO, the footer) are
// skipped; MPI's "[1,0]<stdout>:" prefixes are removed.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace meshsim::plan {

struct NcclTestsRank {
  int rank = 0;
  std::string host;
  int device = 0;
  std::string gpu;  // the CUDA device name
};

struct NcclTestsRow {
  Bytes size;
  std::int64_t count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  Time time;  // out of place
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  Time time_in_place;
};

struct NcclTestsRun {
  std::string test;  // "all_reduce_perf"
  std::string op;    // meshsim's name: allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv
  std::vector<NcclTestsRank> ranks;
  std::vector<NcclTestsRow> rows;

  /// The hosts in the order their first rank appears.
  [[nodiscard]] std::vector<std::string> hosts() const;
};

/// The op meshsim times for an nccl-tests binary ("all_reduce_perf" →
/// "allreduce"); empty for one it does not model (reduce_perf,
/// hypercube_perf, ...).
[[nodiscard]] std::string nccl_tests_op(std::string_view test);

/// The nccl-tests binary for one of meshsim's ops ("allreduce" →
/// "all_reduce_perf"); empty for none.
[[nodiscard]] std::string nccl_tests_name(std::string_view op);

/// ConfigError naming `file` (and the line) for output without rank lines
/// or rows, a row that does not parse, or a test that cannot be told.
[[nodiscard]] NcclTestsRun parse_nccl_tests(std::string_view text, const std::string& file);
[[nodiscard]] NcclTestsRun load_nccl_tests_file(const std::string& file);

/// `r` in nccl-tests' own layout (its version 2.19 header, rank lines,
/// rows and footer; the in-place columns repeat the out-of-place ones).
[[nodiscard]] std::string nccl_tests_text(const NcclTestsRun& r);

}  // namespace meshsim::plan
