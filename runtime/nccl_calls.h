#pragma once
// The NCCL backend's program, built on the CPU so that it can be tested
// anywhere: which NCCL calls each rank issues, on which communicator, in
// which order.
//
// Ranks: one per plan device, rank r being Plan::devices[r]. Point-to-point calls
// go on a communicator spanning every rank, one per plan stream
// (communicator 0 is stream 0's): NCCL runs the operations of one
// communicator one after another, so tasks the plan puts on different
// streams need different communicators to overlap. Each distinct (device
// group, stream) of a broadcast or a payload-less collective gets its own
// communicator, created once per plan (ranks in the group's order, so the
// first device is comm rank 0).
//
// Tasks are visited in Schedule order; each task's calls form one
// ncclGroupStart/End group on every rank it involves:
//   send            per payload region: send on the source rank, recv on
//                   the destination rank (a payload-less send: one pair of
//                   `size` bytes)
//   broadcast       regions that all carry one box from the root: one
//                   ncclBroadcast on the group's communicator (root = comm
//                   rank 0); any other payload: a send/recv pair per region;
//                   no payload: a broadcast of `size`
//   collective      sum payload (reduce: sum): an all_reduce in which every
//                   member adds one part buffer of each member into one
//                   buffer of its own (plan/builder.h's add_sum_payload) is
//                   one ncclAllReduce of the box, in place in each member's
//                   sum (its own part packed there first); other sum
//                   payloads are refused. Other payload: a send/recv pair
//                   per region (a region between two buffers of one device
//                   is a local copy); no payload:
//                   the NCCL collective of `size` on the group's
//                   communicator, except all_to_all: a send/recv pair of
//                   size/n per ordered pair. The algorithm, protocol and
//                   channels a task forces are the communicator's
//                   (NcclComm); direct has no NCCL algorithm and forces none.
//   compute         no NCCL call (the rank runs it on its stream)
// Every rank issues its calls in this one order, which is what NCCL
// requires: on each communicator all members issue the same collective
// sequence, and between each ordered pair the sends match the receives in
// order and size. check_program() verifies exactly that.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/backend.h"

namespace meshsim::runtime {

enum class NcclOp : std::uint8_t {
  send,
  recv,
  local_copy,
  broadcast,
  all_gather,
  reduce_scatter,
  all_reduce
};
[[nodiscard]] std::string_view to_string(NcclOp op);

inline constexpr std::size_t kScratch = std::numeric_limits<std::size_t>::max();

struct NcclCall {
  std::size_t task = 0;
  NcclOp op = NcclOp::send;
  int comm = 0;   // index into NcclProgram::comms
  int peer = -1;  // send/recv: the other rank (world); broadcast: root's comm rank
  std::int64_t bytes = 0;
  std::size_t region = kScratch;        // payload region of the task, or kScratch (scratch area)
  plan::DType dtype = plan::DType::u8;  // reduce_scatter, all_reduce: the element type summed

  friend bool operator==(const NcclCall&, const NcclCall&) = default;
};

struct NcclComm {
  std::vector<int> ranks;      // world ranks, in comm-rank order
  int stream = 0;              // the plan stream whose tasks use it
  bool world = false;          // spans every rank, for point-to-point calls
  std::size_t first_task = 0;  // the task that needs it first
  // What the plan's collectives on it force (collective table, NCCL names);
  // NCCL reads them as NCCL_ALGO, NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS when
  // the communicator is created, so one communicator runs one choice.
  std::string nccl_algo;        // "Ring", "Tree", "NVLS", "NVLSTree"; empty: NCCL's
  std::string nccl_proto;       // "LL", "LL128", "Simple"; empty: NCCL's
  int channels = 0;             // 0: NCCL's
  bool mixed = false;           // its tasks force different choices
  std::size_t collectives = 0;  // collective tasks that run on it
};

struct NcclProgram {
  std::vector<std::string> devices;          // rank → plan device
  std::vector<NcclComm> comms;               // comms[0]: every rank, stream 0
  std::vector<std::vector<NcclCall>> calls;  // per rank, in issue order
};

[[nodiscard]] NcclProgram nccl_program(const plan::Plan& plan, const Schedule& schedule);

/// What breaks NCCL's ordering rules, or asks a communicator for two
/// different forced choices, one line per problem; empty if none.
[[nodiscard]] std::vector<std::string> check_program(const NcclProgram& p, const plan::Plan& plan);

}  // namespace meshsim::runtime
