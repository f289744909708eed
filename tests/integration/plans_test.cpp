// The runtime on the planners' real plans: every case of the bundled study
// (scaled down) with every strategy and balancing mode is moved on the host
// backend with every byte verified, and its NCCL program obeys NCCL's
// ordering rules; and it survives a round trip through its file format.

#include <algorithm>
#include <iterator>
#include <numeric>
#include <optional>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "pipeline/iteration.h"
#include "plan/plan_json.h"
#include "reshard/evaluate.h"
#include "reshard/redistribute/evaluate.h"
#include "runtime/host_backend.h"
#include "runtime/nccl_calls.h"
#include "studies/reshard_study.h"
#include "tests/gpu/gpu_test_util.h"
#include "topology/cluster.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::runtime;

namespace {

// Shrinks a study tensor: each dimension by its largest power-of-two factor
// that leaves at least 16 (so shard counts up to 16 still divide it); a
// replicated 1-D tensor (the one-to-many suite) becomes 4,096 elements.
plan::Tensor shrink(plan::Tensor t, bool replicated) {
  if (t.shape.size() == 1 && replicated) {
    t.shape[0] = 4096;
    return t;
  }
  for (auto& d : t.shape) {
    std::int64_t f = 1;
    while (d % (2 * f) == 0 && d / (2 * f) >= 16) f *= 2;
    d /= f;
  }
  return t;
}

}  // namespace

TEST_CASE("every study case, strategy and balance moves the right bytes, its NCCL program is consistent",
          "[runtime][plans][whole-study]") {
  // Expectation for each (case, strategy, balance) that moves data: the
  // host run checks every destination tile and finds it right, and the
  // NCCL program has no ordering problem.
  const studies::ReshardStudy study = studies::load_study_file(
      MESHSIM_SOURCE_DIR "/configs/studies/alpa-microbench.json", studies::load_reshard_study);
  const auto topo = topology::load_topology_file(study.topology);
  int plans = 0;
  for (const auto& c : study.cases) {
    const reshard::ReshardProblem p = reshard::make_problem(
        topo, shrink(reshard::parse_tensor_arg(c.tensor), c.src_spec == "R" && c.dst_spec == "R"), c.src_mesh,
        c.src_spec, c.dst_mesh, c.dst_spec);
    const auto outcomes = reshard::evaluate_reshard(topo, p, reshard::unit_tasks(p), study.strategies,
                                                    study.balances, study.with_auto);
    for (const auto& o : outcomes) {
      if (!o.moves_data) continue;
      INFO(c.name << " " << o.method.name() << " " << o.method.balance_name());
      const Verification v = verify_on_host(o.plan);
      CHECK(v.ok);
      CHECK(v.buffers_checked == p.dst.size());
      if (!v.mismatches.empty()) FAIL_CHECK(v.mismatches.front().describe());
      // The plan survives its file format: written and read back, it is the same plan.
      const Json j = plan::plan_to_json(o.plan);
      CHECK(plan::plan_to_json(plan::plan_from_json(j, "plan.json")) == j);
      const auto problems =
          check_program(nccl_program(o.plan, plan::make_schedule(o.plan, "<plan>")), o.plan);
      CHECK(problems.empty());
      if (!problems.empty()) FAIL_CHECK(problems.front());
      ++plans;
    }
  }
  // 9 multi-to-multi + 28 one-to-many cases (or however many the study has)
  // x (4 moving strategies x 5 balances + auto).
  CHECK(plans == static_cast<int>(study.cases.size()) * 21);
}

TEST_CASE("NCCL broadcast groups and roots are the planned ones", "[runtime][nccl]") {
  // The broadcast strategy on case 2 (R R R on hosts 0-1 -> S0 R R on hosts
  // 2-3), shrunk: every broadcast task becomes one ncclBroadcast on a
  // communicator whose ranks are the task's devices in plan order, root
  // comm rank 0 (the task's first device), issued by each of them once.
  const auto topo = topology::load_topology_file(MESHSIM_SOURCE_DIR "/configs/topologies/p3.8xlarge-x5.json");
  const reshard::ReshardProblem p = reshard::make_problem(
      topo, plan::Tensor{"x", {64, 32, 16}, plan::DType::i32}, "hosts=0-1", "R R R", "hosts=2-3", "S0 R R");
  const auto plan = reshard::build_plan(topo, p, reshard::unit_tasks(p), reshard::Strategy::broadcast,
                                        reshard::Balance::host_order);
  const NcclProgram prog = nccl_program(plan, plan::make_schedule(plan, "<plan>"));
  int broadcasts = 0;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    if (t.kind != plan::TaskKind::broadcast) continue;
    ++broadcasts;
    std::vector<int> ranks;
    for (std::size_t d : t.devices) {
      REQUIRE(prog.devices[d] == plan.devices[d]);  // ranks are the plan's device indices
      ranks.push_back(static_cast<int>(d));
    }
    for (int r : ranks) {
      const auto& calls = prog.calls[static_cast<std::size_t>(r)];
      const auto n =
          std::count_if(calls.begin(), calls.end(), [&](const NcclCall& c) { return c.task == i; });
      REQUIRE(n == 1);
      const auto it =
          std::find_if(calls.begin(), calls.end(), [&](const NcclCall& c) { return c.task == i; });
      CHECK(it->op == NcclOp::broadcast);
      CHECK(it->peer == 0);
      CHECK(prog.comms[static_cast<std::size_t>(it->comm)].ranks == ranks);
    }
  }
  CHECK(broadcasts > 0);
  CHECK(check_program(prog, plan).empty());
}

TEST_CASE("check_program catches calls out of order", "[runtime][nccl]") {
  // Two sends a -> b in tasks s0 then s1: if b posts its receives in the
  // other order, the pair no longer matches; a broadcast one member skips
  // breaks its communicator's sequence.
  plan::Plan plan;
  plan.name = "order";
  plan.devices = {"a", "b", "c"};
  for (const char* id : {"s0", "s1"}) {
    plan::Task t;
    t.id = id;
    t.kind = plan::TaskKind::send;
    t.devices = {0, 1};
    t.size = Bytes(std::string(id) == "s0" ? 100 : 200);
    plan.tasks.push_back(t);
  }
  plan::Task bc;
  bc.id = "bc";
  bc.kind = plan::TaskKind::broadcast;
  bc.devices = {0, 1, 2};
  bc.size = Bytes(64);
  plan.tasks.push_back(bc);
  NcclProgram prog = nccl_program(plan, plan::make_schedule(plan, "<plan>"));
  REQUIRE(check_program(prog, plan).empty());
  CHECK(prog.comms.size() == 2);  // the world and the broadcast's group
  auto& b = prog.calls[1];
  REQUIRE(b.size() == 3);
  std::swap(b[0], b[1]);
  CHECK(check_program(prog, plan).size() == 1);
  std::swap(b[0], b[1]);
  prog.calls[2].clear();  // c never joins the broadcast
  const auto problems = check_program(prog, plan);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("communicator 1") != std::string::npos);
}

TEST_CASE("forced collective choices become the communicator's NCCL_ALGO and NCCL_PROTO", "[runtime][nccl]") {
  // Two all-reduces over {a, b, c}: on stream 0 forced to tree/LL with 4
  // channels, on stream 1 left to NCCL. Each stream has its own
  // communicator: the first carries Tree/LL/4, the second nothing. A third
  // all-reduce on stream 0 forcing the ring cannot share that communicator.
  plan::Plan plan;
  plan.name = "choices";
  plan.devices = {"a", "b", "c"};
  auto ar = [&](const char* id, int stream, std::optional<plan::Algorithm> a, std::optional<plan::Protocol> p,
                int channels) {
    plan::Task t;
    t.id = id;
    t.kind = plan::TaskKind::collective;
    t.op = plan::CollectiveOp::all_reduce;
    t.devices = {0, 1, 2};
    t.size = Bytes(3 << 20);
    t.stream = stream;
    t.algorithm = a;
    t.protocol = p;
    t.channels = channels;
    plan.tasks.push_back(t);
  };
  ar("forced", 0, plan::Algorithm::tree, plan::Protocol::ll, 4);
  ar("free", 1, std::nullopt, std::nullopt, 0);
  plan.tasks[0].dtype = plan::DType::f32;
  NcclProgram prog = nccl_program(plan, plan::make_schedule(plan, "<plan>"));
  REQUIRE(check_program(prog, plan).empty());
  // The all-reduce sums the task's element type (f32 here; f16 by default).
  CHECK(prog.calls[0][0].dtype == plan::DType::f32);
  CHECK(prog.calls[0][1].dtype == plan::DType::f16);
  const auto& forced = prog.comms[static_cast<std::size_t>(prog.calls[0][0].comm)];
  CHECK(forced.nccl_algo == "Tree");
  CHECK(forced.nccl_proto == "LL");
  CHECK(forced.channels == 4);
  const auto& free = prog.comms[static_cast<std::size_t>(prog.calls[0][1].comm)];
  CHECK(free.nccl_algo.empty());
  CHECK(free.nccl_proto.empty());
  ar("clash", 0, plan::Algorithm::ring, plan::Protocol::simple, 4);
  prog = nccl_program(plan, plan::make_schedule(plan, "<plan>"));
  const auto problems = check_program(prog, plan);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("force different algorithms") != std::string::npos);
}

TEST_CASE("a sum payload is one ncclAllReduce in place in each member's sum buffer", "[runtime][nccl]") {
  // sum_plan's all_reduce over 4 ranks: each rank k adds parts p0..p3 into
  // its s<k>. NCCL runs it as one all_reduce of the 8 x 10 box on the
  // group's communicator; rank k's call carries its own region (p<k> ->
  // s<k>, region 5k of the payload) and the tensor's dtype.
  const plan::Plan plan = gputest::sum_plan(plan::DType::bf16, 4, plan::CollectiveOp::all_reduce);
  const NcclProgram prog = nccl_program(plan, plan::make_schedule(plan, "<plan>"));
  CHECK(check_program(prog, plan).empty());
  REQUIRE(prog.comms.size() == 2);  // the world, and the group's
  for (std::size_t r = 0; r < 4; ++r) {
    REQUIRE(prog.calls[r].size() == 1);
    const NcclCall& c = prog.calls[r][0];
    CHECK(c.op == NcclOp::all_reduce);
    CHECK(c.comm == 1);
    CHECK(c.bytes == 8 * 10 * 2);
    CHECK(c.dtype == plan::DType::bf16);
    REQUIRE(c.region == 5 * r);
    const plan::Region& own = plan.tasks[0].payload[c.region];
    CHECK(plan.buffers[own.src_buffer].name == fmt::format("p{}", r));
    CHECK(plan.buffers[own.dst_buffer].name == fmt::format("s{}", r));
  }
  // A reduce-scatter's sums, or an all-reduce missing a contribution, have
  // no single NCCL call: the nccl backend refuses them by name.
  const plan::Plan rs = gputest::sum_plan(plan::DType::f32, 4, plan::CollectiveOp::reduce_scatter);
  CHECK_THROWS_WITH(
      nccl_program(rs, plan::make_schedule(rs, "<plan>")),
      Catch::Matchers::Contains("task \"reduce\"") && Catch::Matchers::Contains("host or cuda backend"));
  plan::Plan missing = plan;
  missing.tasks[0].payload.pop_back();
  CHECK_THROWS_AS(nccl_program(missing, plan::make_schedule(missing, "<plan>")), UsageError);
}

TEST_CASE("a pipeline plan with payloads has an NCCL program: its all-reduces are sums", "[runtime][nccl]") {
  // dp 2 x tp 2 x pp 2 on two DGX A100s, with payloads (as `pipeline
  // --plan-out` writes it): every tensor and data-parallel all-reduce is a
  // sum payload of the form NCCL runs as one ncclAllReduce, and the program
  // obeys NCCL's ordering rules.
  topology::ClusterSpec spec;
  spec.host_preset = "dgx-a100";
  spec.hosts = 2;
  const auto topo = topology::build_cluster(spec);
  pipeline::PipelineConfig cfg;
  cfg.dp = 2;
  cfg.tp = 2;
  cfg.pp = 2;
  cfg.microbatches = 4;
  cfg.reshard = reshard::Strategy::send_recv;
  cfg.payloads = true;
  const auto it = pipeline::build_pipeline(model::gpt_model("small", 8, 256, 8, 128, 1000), topo, cfg);
  const NcclProgram prog = nccl_program(it.plan, plan::make_schedule(it.plan, "<plan>"));
  CHECK(check_program(prog, it.plan).empty());
  std::size_t sums = 0;
  for (const auto& calls : prog.calls)
    for (const NcclCall& c : calls) sums += c.op == NcclOp::all_reduce && c.region != kScratch ? 1 : 0;
  std::size_t members = 0;
  for (const plan::Task& t : it.plan.tasks)
    if (t.kind == plan::TaskKind::collective) members += t.devices.size();
  CHECK(sums == members);
  CHECK(sums > 0);
}

TEST_CASE("local copies and redistributions survive the file format and make consistent NCCL programs",
          "[runtime][nccl]") {
  // Overlapping meshes (hosts 0-1 -> 1-2, S0 R R -> R R R): host 1's GPUs
  // hold rows 32-63 already, so each copies them locally: a send from the
  // device to itself, which the NCCL program issues as one local_copy on
  // that rank and no send or receive. A same-mesh redistribution's plans
  // (all-to-alls, gathers, exchanges with local copies) pass the same checks.
  const auto topo = topology::load_topology_file(MESHSIM_SOURCE_DIR "/configs/topologies/p3.8xlarge-x5.json");
  const reshard::ReshardProblem p = reshard::make_problem(
      topo, plan::Tensor{"x", {64, 32, 16}, plan::DType::i32}, "hosts=0-1", "S0 R R", "hosts=1-2", "R R R");
  std::vector<plan::Plan> plans{reshard::build_plan(topo, p, reshard::unit_tasks(p),
                                                    reshard::Strategy::scatter, reshard::Balance::none)};
  int local_sends = 0;
  for (const auto& t : plans[0].tasks)
    local_sends += t.kind == plan::TaskKind::send && t.devices[0] == t.devices[1] ? 1 : 0;
  CHECK(local_sends == 4);
  namespace rd = reshard::redistribute;
  const rd::Problem q =
      rd::make_problem(topo, plan::Tensor{"y", {32, 48}, plan::DType::bf16}, "hosts=0-1", "S01 R", "R S10");
  rd::StepTimer timer(topo, q);
  for (auto& o : rd::evaluate(topo, q, {std::begin(rd::kAllStrategies), std::end(rd::kAllStrategies)}, timer))
    plans.push_back(std::move(o.emission.plan));
  for (const auto& plan : plans) {
    INFO(plan.name);
    const Json j = plan::plan_to_json(plan);
    const plan::Plan back = plan::plan_from_json(j, "plan.json");
    CHECK(plan::plan_to_json(back) == j);
    CHECK(verify_on_host(back).ok);
    const NcclProgram prog = nccl_program(back, plan::make_schedule(back, "<plan>"));
    CHECK(check_program(prog, back).empty());
    for (std::size_t i = 0; i < back.tasks.size(); ++i) {
      const auto& t = back.tasks[i];
      if (t.kind != plan::TaskKind::send || t.devices[0] != t.devices[1]) continue;
      const auto& calls = prog.calls[t.devices[0]];
      CHECK(std::count_if(calls.begin(), calls.end(),
                          [&](const NcclCall& c) { return c.task == i && c.op == NcclOp::local_copy; }) == 1);
    }
  }
}
