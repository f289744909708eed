#include "runtime/nccl_calls.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "runtime/work.h"

namespace meshsim::runtime {

namespace {

// Records on `comm` what the collective task `t` forces, in NCCL's names.
void force_choices(NcclComm& comm, const plan::Task& t) {
  const std::string algo = t.algorithm && *t.algorithm != plan::Algorithm::direct
                               ? std::string(plan::traits(*t.algorithm).nccl_name)
                               : std::string();
  const std::string proto = t.protocol ? std::string(plan::traits(*t.protocol).nccl_name) : std::string();
  if (comm.collectives++ == 0) {
    comm.nccl_algo = algo;
    comm.nccl_proto = proto;
    comm.channels = t.channels;
  } else if (comm.nccl_algo != algo || comm.nccl_proto != proto || comm.channels != t.channels) {
    comm.mixed = true;
  }
}

}  // namespace

std::string_view to_string(NcclOp op) {
  switch (op) {
    case NcclOp::send: return "send";
    case NcclOp::recv: return "recv";
    case NcclOp::local_copy: return "local_copy";
    case NcclOp::broadcast: return "broadcast";
    case NcclOp::all_gather: return "all_gather";
    case NcclOp::reduce_scatter: return "reduce_scatter";
    case NcclOp::all_reduce: return "all_reduce";
  }
  return "?";
}

namespace {

// Builds an NcclProgram task by task (nccl_calls.h has the rules).
class ProgramBuilder {
 public:
  explicit ProgramBuilder(const plan::Plan& plan) : plan_(plan) {
    p_.devices = plan.devices;
    p_.calls.resize(p_.devices.size());
    NcclComm world;
    for (int r = 0; r < static_cast<int>(p_.devices.size()); ++r) world.ranks.push_back(r);
    world.world = true;
    p_.comms.push_back(world);
  }

  void add(std::size_t i) {
    const auto& t = plan_.tasks[i];
    switch (t.kind) {
      case plan::TaskKind::compute: break;
      case plan::TaskKind::send:
        if (t.payload.empty())
          pair(i, rank(t.devices[0]), rank(t.devices[1]), t.size.count(), kScratch);
        else
          regions_as_pairs(i);
        break;
      case plan::TaskKind::broadcast: broadcast(i); break;
      case plan::TaskKind::collective: collective(i); break;
    }
  }

  NcclProgram take() { return std::move(p_); }

 private:
  // Ranks are the plan's device indices.
  static int rank(std::size_t d) { return static_cast<int>(d); }
  int buffer_rank(std::size_t b) const { return rank(plan_.buffers[b].device); }

  // The communicator over every rank for point-to-point calls on `stream`.
  int world_comm(int stream, std::size_t task) {
    auto [it, fresh] = world_of_.emplace(stream, static_cast<int>(p_.comms.size()));
    if (fresh) {
      NcclComm c;
      c.ranks = p_.comms[0].ranks;
      c.stream = stream;
      c.world = true;
      c.first_task = task;
      p_.comms.push_back(std::move(c));
    }
    return it->second;
  }

  // The communicator of a task's device group on its stream.
  int group_comm(const plan::Task& t, std::size_t task) {
    std::vector<int> ranks;
    for (const auto& d : t.devices) ranks.push_back(rank(d));
    auto [it, fresh] = comm_of_.emplace(std::pair{ranks, t.stream}, static_cast<int>(p_.comms.size()));
    if (fresh) {
      NcclComm c;
      c.ranks = ranks;
      c.stream = t.stream;
      c.first_task = task;
      p_.comms.push_back(std::move(c));
    }
    return it->second;
  }

  void pair(std::size_t task, int a, int b, std::int64_t bytes, std::size_t region) {
    if (a == b) {
      p_.calls[static_cast<std::size_t>(a)].push_back({task, NcclOp::local_copy, -1, a, bytes, region});
      return;
    }
    const int comm = world_comm(plan_.tasks[task].stream, task);
    p_.calls[static_cast<std::size_t>(a)].push_back({task, NcclOp::send, comm, b, bytes, region});
    p_.calls[static_cast<std::size_t>(b)].push_back({task, NcclOp::recv, comm, a, bytes, region});
  }

  std::int64_t region_bytes(const plan::Region& r) const { return plan::region_bytes(plan_, r).count(); }

  void regions_as_pairs(std::size_t i) {
    const auto& t = plan_.tasks[i];
    for (std::size_t k = 0; k < t.payload.size(); ++k) {
      const auto& r = t.payload[k];
      pair(i, buffer_rank(r.src_buffer), buffer_rank(r.dst_buffer), region_bytes(r), k);
    }
  }

  // Whether a broadcast's payload is one box from the root, once to each receiver.
  bool one_box(const plan::Task& t) const {
    const int root = rank(t.devices[0]);
    bool one = !t.payload.empty();
    for (const auto& r : t.payload)
      one = one && r.tensor == t.payload[0].tensor && r.box == t.payload[0].box &&
            buffer_rank(r.src_buffer) == root && buffer_rank(r.dst_buffer) != root;
    if (!one) return false;
    std::vector<int> got;
    for (const auto& r : t.payload) got.push_back(buffer_rank(r.dst_buffer));
    std::sort(got.begin(), got.end());
    return std::adjacent_find(got.begin(), got.end()) == got.end() && got.size() + 1 == t.devices.size();
  }

  void broadcast(std::size_t i) {
    const auto& t = plan_.tasks[i];
    if (!t.payload.empty() && !one_box(t)) {
      regions_as_pairs(i);
      return;
    }
    const int comm = group_comm(t, i);
    const std::int64_t bytes = t.payload.empty() ? t.size.count() : region_bytes(t.payload[0]);
    for (const auto& d : t.devices) {
      std::size_t region = kScratch;
      if (!t.payload.empty()) {
        region = 0;  // the root reads region 0's source
        for (std::size_t k = 0; k < t.payload.size(); ++k)
          if (buffer_rank(t.payload[k].dst_buffer) == rank(d)) region = k;
      }
      p_.calls[static_cast<std::size_t>(rank(d))].push_back({i, NcclOp::broadcast, comm, 0, bytes, region});
    }
  }

  // A sum payload NCCL runs as one ncclAllReduce: an all_reduce whose
  // regions all carry one box, every member summing one part buffer of each
  // member into one buffer of its own (as add_sum_payload writes them).
  // Returns, per member, its own part's region into its own sum; empty when
  // the payload has another form.
  std::vector<std::size_t> all_reduce_regions(const plan::Task& t) const {
    const std::size_t n = t.devices.size();
    if (t.op != plan::CollectiveOp::all_reduce || t.payload.size() != n * n) return {};
    std::map<int, std::size_t> member;  // rank -> position in the group
    for (std::size_t k = 0; k < n; ++k) member[rank(t.devices[k])] = k;
    std::vector<std::size_t> part(n, kScratch), sum(n, kScratch), own(n, kScratch);
    std::set<std::pair<std::size_t, std::size_t>> pairs;
    for (std::size_t k = 0; k < t.payload.size(); ++k) {
      const auto& r = t.payload[k];
      const auto from = member.find(buffer_rank(r.src_buffer));
      const auto to = member.find(buffer_rank(r.dst_buffer));
      if (!r.reduce || r.tensor != t.payload[0].tensor || r.box != t.payload[0].box || from == member.end() ||
          to == member.end() || !pairs.emplace(from->second, to->second).second)
        return {};
      std::size_t& p = part[from->second];
      std::size_t& q = sum[to->second];
      if ((p != kScratch && p != r.src_buffer) || (q != kScratch && q != r.dst_buffer)) return {};
      p = r.src_buffer;
      q = r.dst_buffer;
      if (from->second == to->second) own[to->second] = k;
    }
    return own;  // n * n distinct pairs: every member has its own region
  }

  void collective(std::size_t i) {
    const auto& t = plan_.tasks[i];
    const bool sums = std::any_of(t.payload.begin(), t.payload.end(), [](const auto& r) { return r.reduce; });
    if (sums) {
      const std::vector<std::size_t> own = all_reduce_regions(t);
      if (own.empty())
        throw UsageError(fmt::format(
            "task \"{}\": the nccl backend runs a sum payload as one all_reduce in which every member adds "
            "one part buffer of each member into one buffer of its own; run this plan on the host or cuda "
            "backend",
            t.id));
      const int comm = group_comm(t, i);
      force_choices(p_.comms[static_cast<std::size_t>(comm)], t);
      for (std::size_t k = 0; k < own.size(); ++k)
        p_.calls[static_cast<std::size_t>(rank(t.devices[k]))].push_back(
            {i, NcclOp::all_reduce, comm, -1, region_bytes(t.payload[own[k]]), own[k],
             plan_.tensors[t.payload[own[k]].tensor].dtype});
      return;
    }
    if (!t.payload.empty()) {
      regions_as_pairs(i);
      return;
    }
    if (t.op == plan::CollectiveOp::all_to_all) {
      const auto n = static_cast<std::int64_t>(t.devices.size());
      for (const auto& a : t.devices)
        for (const auto& b : t.devices)
          if (a != b) pair(i, rank(a), rank(b), t.size.count() / n, kScratch);
      return;
    }
    const int comm = group_comm(t, i);
    force_choices(p_.comms[static_cast<std::size_t>(comm)], t);
    const NcclOp op = t.op == plan::CollectiveOp::all_gather       ? NcclOp::all_gather
                      : t.op == plan::CollectiveOp::reduce_scatter ? NcclOp::reduce_scatter
                                                                   : NcclOp::all_reduce;
    for (const auto& d : t.devices)
      p_.calls[static_cast<std::size_t>(rank(d))].push_back(
          {i, op, comm, -1, t.size.count(), kScratch,
           plan::traits(t.op).reduces ? t.dtype : plan::DType::u8});
  }

  const plan::Plan& plan_;
  NcclProgram p_;
  std::map<int, int> world_of_{{0, 0}};  // plan stream -> its point-to-point communicator
  std::map<std::pair<std::vector<int>, int>, int> comm_of_;
};

}  // namespace

NcclProgram nccl_program(const plan::Plan& plan, const Schedule& schedule) {
  ProgramBuilder b(plan);
  for (std::size_t i : schedule.order) b.add(i);
  return b.take();
}

std::vector<std::string> check_program(const NcclProgram& p, const plan::Plan& plan) {
  std::vector<std::string> problems;
  for (std::size_t c = 0; c < p.comms.size(); ++c)
    if (p.comms[c].mixed)
      problems.push_back(fmt::format(
          "communicator {}: its collectives force different algorithms, protocols or channels; NCCL fixes "
          "them per communicator (put them on different streams)",
          c));
  const auto nranks = static_cast<int>(p.devices.size());
  // Collectives: per communicator, every member's sequence is the same;
  // non-members issue nothing on it.
  for (std::size_t c = 0; c < p.comms.size(); ++c) {
    if (p.comms[c].world) continue;
    const auto& members = p.comms[c].ranks;
    std::vector<std::tuple<std::size_t, NcclOp, int, std::int64_t>> ref;
    bool first = true;
    for (int r = 0; r < nranks; ++r) {
      std::vector<std::tuple<std::size_t, NcclOp, int, std::int64_t>> seq;
      for (const auto& call : p.calls[static_cast<std::size_t>(r)])
        if (call.comm == static_cast<int>(c)) seq.emplace_back(call.task, call.op, call.peer, call.bytes);
      const bool member = std::find(members.begin(), members.end(), r) != members.end();
      if (!member) {
        if (!seq.empty())
          problems.push_back(fmt::format("rank {} ({}) issues calls on communicator {} it is not in", r,
                                         p.devices[static_cast<std::size_t>(r)], c));
        continue;
      }
      if (first) {
        ref = std::move(seq);
        first = false;
      } else if (seq != ref) {
        problems.push_back(
            fmt::format("communicator {}: rank {} ({}) issues its collectives in a different order", c, r,
                        p.devices[static_cast<std::size_t>(r)]));
      }
    }
    for (const auto& [task, op, root, bytes] : ref)
      if (op == NcclOp::broadcast && (root < 0 || root >= static_cast<int>(members.size())))
        problems.push_back(fmt::format("task \"{}\": broadcast root {} is not a rank of its communicator",
                                       plan.tasks[task].id, root));
  }
  // Point to point: the sends a → b, in a's order, match b's receives from a.
  for (int a = 0; a < nranks; ++a)
    for (int b = 0; b < nranks; ++b) {
      if (a == b) continue;
      std::vector<std::pair<std::size_t, std::int64_t>> sends;
      std::vector<std::pair<std::size_t, std::int64_t>> recvs;
      for (const auto& call : p.calls[static_cast<std::size_t>(a)])
        if (call.op == NcclOp::send && call.peer == b) sends.emplace_back(call.task, call.bytes);
      for (const auto& call : p.calls[static_cast<std::size_t>(b)])
        if (call.op == NcclOp::recv && call.peer == a) recvs.emplace_back(call.task, call.bytes);
      if (sends != recvs)
        problems.push_back(fmt::format("{} -> {}: {} sends do not match {} receives in order and size",
                                       p.devices[static_cast<std::size_t>(a)],
                                       p.devices[static_cast<std::size_t>(b)], sends.size(), recvs.size()));
    }
  // Groups: a rank's calls of one task are consecutive (one ncclGroup).
  for (int r = 0; r < nranks; ++r) {
    std::vector<std::size_t> seen;
    const auto& calls = p.calls[static_cast<std::size_t>(r)];
    for (std::size_t k = 0; k < calls.size(); ++k)
      if (k == 0 || calls[k].task != calls[k - 1].task) {
        if (std::find(seen.begin(), seen.end(), calls[k].task) != seen.end())
          problems.push_back(fmt::format("rank {}: the calls of task \"{}\" are split into two groups", r,
                                         plan.tasks[calls[k].task].id));
        seen.push_back(calls[k].task);
      }
  }
  return problems;
}

}  // namespace meshsim::runtime
