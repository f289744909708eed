#include "plan/collective.h"

#include <catch2/catch.hpp>

using namespace meshsim;
using namespace meshsim::plan;

TEST_CASE("the table's step counts and bus factors follow nccl-tests", "[collective-table]") {
  // n = 8: all-reduce 2(n-1) = 14 steps, busbw factor 2 x 7/8 = 1.75;
  // all-gather and reduce-scatter 7 steps, factor 7/8.
  CHECK(ring_steps(CollectiveOp::all_reduce, 8) == 14);
  CHECK(ring_steps(CollectiveOp::all_gather, 8) == 7);
  CHECK(ring_steps(CollectiveOp::reduce_scatter, 5) == 4);
  CHECK(bus_factor(CollectiveOp::all_reduce, 8) == Approx(1.75));
  CHECK(bus_factor(CollectiveOp::all_gather, 8) == Approx(0.875));
  CHECK(bus_factor(CollectiveOp::all_to_all, 4) == Approx(0.75));
  CHECK(direct_phases(CollectiveOp::all_reduce) == 2);
  CHECK(direct_phases(CollectiveOp::all_to_all) == 1);
  CHECK(tree_depth(1) == 0);
  CHECK(tree_depth(2) == 1);
  CHECK(tree_depth(16) == 4);
  CHECK(tree_depth(17) == 5);
}

TEST_CASE("the table holds NCCL's latencies and names", "[collective-table]") {
  // tuning.cc v2.23.4: ring base LL 6.6 / LL128 14 / Simple 8.4 us; ring
  // per-hop NVLink Simple 3.4 us, network LL 2.7 us; NVLS on NVLink 25 us.
  CHECK(base_latency(Algorithm::ring, Protocol::ll) == Time::ns(6600));
  CHECK(base_latency(Algorithm::ring, Protocol::simple) == Time::ns(8400));
  CHECK(base_latency(Algorithm::tree, Protocol::ll) == Time::ns(6800));
  CHECK(hop_latency(Transport::nvlink, Algorithm::ring, Protocol::simple) == Time::ns(3400));
  CHECK(hop_latency(Transport::net, Algorithm::ring, Protocol::ll) == Time::ns(2700));
  CHECK(hop_latency(Transport::net, Algorithm::tree, Protocol::ll) == Time::us(5));
  CHECK(hop_latency(Transport::nvlink, Algorithm::nvls, Protocol::simple) == Time::us(25));
  CHECK(traits(Algorithm::nvls_tree).nccl_name == "NVLSTree");
  CHECK(traits(Protocol::ll128).nccl_name == "LL128");
  CHECK(traits(CollectiveOp::reduce_scatter).nccl_call == "ncclReduceScatter");
  // LL carries 8 data bytes in 16 wire bytes; LL128 120 in 128.
  CHECK(traits(Protocol::ll).wire_factor == 2.0);
  CHECK(traits(Protocol::ll128).wire_factor == Approx(128.0 / 120.0));
}

TEST_CASE("names round-trip and both op spellings are accepted", "[collective-table]") {
  for (CollectiveOp op : kOps) {
    CHECK(op_from(to_string(op)) == op);
    CHECK(op_from(kOpNames.aliases()[static_cast<std::size_t>(op)]) == op);
  }
  for (Algorithm a : kAlgorithms) CHECK(algorithm_from(to_string(a)) == a);
  for (Protocol p : kProtocols) CHECK(protocol_from(to_string(p)) == p);
  CHECK_FALSE(op_from("allreduse"));
  CHECK_FALSE(algorithm_from("Ring"));  // NCCL's spelling is not ours
  CHECK(algorithm_names() == "ring, tree, nvls, nvls_tree, direct, collnet_direct, collnet_chain");
}

TEST_CASE("what each algorithm can run", "[collective-table]") {
  CHECK(supports(Algorithm::ring, CollectiveOp::all_gather));
  CHECK_FALSE(supports(Algorithm::tree, CollectiveOp::all_gather));
  CHECK_FALSE(supports(Algorithm::nvls_tree, CollectiveOp::reduce_scatter));
  CHECK(supports(Algorithm::direct, CollectiveOp::all_to_all));
  CHECK(supports(Algorithm::collnet_direct, CollectiveOp::all_reduce));
  CHECK_FALSE(supports(Algorithm::collnet_chain, CollectiveOp::all_gather));
  CHECK_FALSE(supports(Algorithm::collnet_direct, Protocol::ll));
  CHECK(traits(Algorithm::collnet_direct).needs_sharp);
  CHECK(traits(Algorithm::collnet_chain).nccl_name == "CollNetChain");
  CHECK_FALSE(supports(Algorithm::ring, CollectiveOp::all_to_all));
  CHECK(supports(Algorithm::tree, Protocol::ll));
  CHECK_FALSE(supports(Algorithm::nvls, Protocol::ll128));
  CHECK(nvls_capable_model("H100"));
  CHECK_FALSE(nvls_capable_model("A100"));
  CHECK(nvls_efficiency("H200") == 0.85);
  // NCCL's per-channel tree limit, halved to algorithm bandwidth: Ampere on
  // two hosts 23.6 / 2 = 11.8 GB/s; unknown GPUs have none.
  CHECK(tree_channel_limit("A100", 2).bytes_per_second_f() == Approx(11.8e9));
  CHECK(tree_channel_limit("H100", 16).bytes_per_second_f() == Approx(18.0e9));
  CHECK(tree_channel_limit("MI300", 2).bps() == 0);
}
