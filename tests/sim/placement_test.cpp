// A job's placement on a 2:1 fat tree, by hand: 4 DGX-H100 (8 × 400 Gb/s
// NICs each, 94 % achieved), 16 NICs per leaf, so hosts 0-1 on one leaf
// and 2-3 on the other, each leaf with 8 uplinks for its 16 NICs.
//
// A ring all-reduce runs 8 channels, channel k leaving each host through
// NIC k, one flow per host boundary of the ring. Large sizes run at
// busbw = channels × NIC rate = 8 × 50 GB/s × 0.94 = 376 GB/s when no
// uplink is shared.
//   contiguous (ring h0 h1 h2 h3): two boundaries cross the spines, one
//     each way per leaf: 8 flows on a leaf's 8 uplinks, none shared.
//   hosts=0,2,1,3: every boundary crosses: 16 flows leave each leaf on 8
//     uplinks, each at half a NIC, busbw 188 GB/s.
// Adaptive routing gives every flow its own uplink where it can, so those
// are its figures. Deterministic routing (D mod K over the fabric's NICs,
// numbered host by host) reaches them too: the 8 flows leaving a leaf for
// one host go to its NICs 0-7, which turn at spines 0-7, one each; the
// crossing placement's 16 go to two hosts, two flows per spine. ECMP's fixed hashes put some flows on one
// uplink whatever the placement, so it is slower than adaptive for each, and the crossing placement slower
// than contiguous under it too.

#include "topology/placement.h"

#include <catch2/catch.hpp>

#include "sim/executor.h"
#include "sim/nccl_fit.h"
#include "sim/ring_order.h"
#include "tests/topology/test_util.h"
#include "topology/cluster.h"

using namespace meshsim;

namespace {

constexpr double kSize = 4.0 * (1 << 30);

// busbw (GB/s) of a 4 GiB ring all-reduce over every GPU, placed as `placement`.
double busbw(const std::string& placement, topology::RoutingPolicy routing) {
  topology::Topology t = topology::test::two_leaf_tree(routing);
  t.placement = placement;
  (void)topology::place_job(t, 4);
  std::vector<std::string> ring;
  for (topology::NodeId g : sim::ring_order(t, t.gpus())) ring.push_back(t.node(g).name);
  const sim::NcclTestSpec spec{"allreduce", plan::Algorithm::ring, std::nullopt, 0};
  const Time time = sim::simulate(sim::nccl_test_plan(spec, ring, Bytes(1LL << 32)), t).makespan;
  return kSize / time.seconds() / 1e9 * 2 * 31 / 32;
}

}  // namespace

TEST_CASE("a placement whose ring crosses the spines halves an all-reduce on a 2:1 tree", "[placement]") {
  using topology::RoutingPolicy;
  const double contiguous = busbw("contiguous", RoutingPolicy::adaptive);
  const double crossing = busbw("hosts=0,2,1,3", RoutingPolicy::adaptive);
  CHECK(contiguous == Approx(376).epsilon(0.04));  // latency costs a little at 4 GiB
  CHECK(crossing == Approx(188).epsilon(0.04));
  CHECK(contiguous / crossing == Approx(2).epsilon(0.03));
  // A random draw lands somewhere between: never faster than contiguous.
  CHECK(busbw("random:1", RoutingPolicy::adaptive) <= contiguous);
  // Deterministic: the same as adaptive on both.
  CHECK(busbw("contiguous", RoutingPolicy::deterministic) == Approx(contiguous).epsilon(0.01));
  CHECK(busbw("hosts=0,2,1,3", RoutingPolicy::deterministic) == Approx(crossing).epsilon(0.01));
  // ECMP: each placement slower than adaptive, and the order kept.
  const double ecmp_contiguous = busbw("contiguous", RoutingPolicy::ecmp);
  const double ecmp_crossing = busbw("hosts=0,2,1,3", RoutingPolicy::ecmp);
  CHECK(ecmp_contiguous < contiguous);
  CHECK(ecmp_crossing < crossing);
  CHECK(ecmp_crossing < ecmp_contiguous);
  CHECK(busbw("random:1", RoutingPolicy::ecmp) < ecmp_contiguous);
}
