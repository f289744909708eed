#include "topology/summary.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "tests/topology/test_util.h"

using namespace meshsim;
using namespace meshsim::topology;
using namespace meshsim::topology::test;

TEST_CASE("per-GPU NVLink and NIC figures", "[summary]") {
  // V100 cube mesh: 6 lanes × 25 GB/s = 150 GB/s line, 120 effective; one
  // 25 Gb/s NIC shared by all 8 GPUs.
  const TopologySummary p3 = summarize(cluster("p3.16xlarge"));
  REQUIRE(p3.gpus.size() == 8);
  for (const auto& g : p3.gpus) {
    CHECK(g.nvlink_links == 6);
    CHECK(g.nvlink_line == Bandwidth::GBps(150));
    CHECK(g.nvlink_capacity == Bandwidth::GBps(120));
    CHECK(g.nic_line == Bandwidth::Gbps(25));
    CHECK(g.nic_shared_by == 8);
  }
  // H100: 18 × 25 = 450 GB/s line, 18 × 20.6 = 370.8 GB/s effective; own 400 Gb/s NIC.
  const TopologySummary h = summarize(cluster("dgx-h100"));
  for (const auto& g : h.gpus) {
    CHECK(g.nvlink_links == 18);
    CHECK(g.nvlink_line == Bandwidth::GBps(450));
    CHECK(g.nvlink_capacity.GBps_f() == Approx(370.8));
    CHECK(g.nic_line == Bandwidth::Gbps(400));
    CHECK(g.nic_shared_by == 1);
  }
}

TEST_CASE("links by kind add up", "[summary]") {
  // p3.16xlarge: 8 NV2 + 8 NV1 links = 16 links, 24 lanes, 600 GB/s per direction.
  const TopologySummary s = summarize(cluster("p3.16xlarge"));
  const auto& nv = s.links_by_kind.at(LinkKind::nvlink);
  CHECK(nv.links == 16);
  CHECK(nv.lanes == 24);
  CHECK(nv.line_rate == Bandwidth::GBps(600));
  CHECK(s.nodes_by_kind.at(NodeKind::gpu) == 8);
  CHECK(s.nodes_by_kind.at(NodeKind::network_switch) == 1);
}

TEST_CASE("bisection bandwidth is the max flow across the host-major cut", "[summary]") {
  // 5 × p3.8xlarge, one switch: hosts 0-1 | 2-4. Two 10 Gb/s NICs on the
  // small side: 20 Gb/s = 2.5 GB/s line rate, 2.25 GB/s effective.
  const TopologySummary a = summarize(cluster("p3.8xlarge", 5));
  REQUIRE(a.bisection);
  CHECK(a.bisection->cut == "hosts 0-1 | hosts 2-4");
  CHECK(a.bisection->line_rate == Bandwidth::Gbps(20));
  CHECK(a.bisection->capacity == Bandwidth::Gbps(18));
  // 32 × DGX-H100 on rails: 16 hosts × 8 NICs × 400 Gb/s cross the cut
  // (the rails are non-blocking): 51.2 Tb/s = 6400 GB/s.
  ClusterSpec s;
  s.host_preset = "dgx-h100";
  s.hosts = 32;
  s.fabric.kind = FabricKind::rail;
  const TopologySummary b = summarize(build_cluster(s));
  CHECK(b.bisection->line_rate == Bandwidth::GBps(6400));
  // An oversubscribed fat tree halves it: 4 hosts, 8 NICs per leaf (one
  // host per leaf), 2:1 -> each leaf has 4 NIC-rate uplinks; hosts 0-1 send
  // 2 × 4 × 400 Gb/s = 3.2 Tb/s = 400 GB/s.
  ClusterSpec f;
  f.host_preset = "dgx-h100";
  f.hosts = 4;
  f.fabric.kind = FabricKind::fat_tree;
  f.fabric.nics_per_leaf = 8;
  f.fabric.oversubscription = 2;
  const TopologySummary c = summarize(build_cluster(f));
  CHECK(c.bisection->line_rate == Bandwidth::GBps(400));
}

TEST_CASE("single-host bisection splits the GPUs in half", "[summary]") {
  // DGX-H100, GPUs 0-3 | 4-7: 4 × 450 GB/s through the NVSwitch, plus the
  // 20 GB/s socket link (GPUs 0-3 hang off socket 0), plus 4 NICs × 50 GB/s
  // through the host's switch: 1800 + 20 + 200 = 2020 GB/s.
  const TopologySummary s = summarize(cluster("dgx-h100"));
  REQUIRE(s.bisection);
  CHECK(s.bisection->cut == "GPUs 0-3 | GPUs 4-7");
  CHECK(s.bisection->line_rate == Bandwidth::GBps(2020));
}

TEST_CASE("hosts without GPUs take no side of the bisection", "[summary]") {
  // Hosts a and b have one GPU each, c and d none: the cut is a | b, over
  // the 10 GB/s link between their NICs' switch ports (line rate 80 Gb/s).
  Topology t;
  for (const char* h : {"a", "b", "c", "d"}) t.add_host(Host{h, ""});
  const NodeId sw = t.add_node(Node{"sw", NodeKind::network_switch, -1, {}});
  for (int h = 0; h < 2; ++h) {
    const NodeId g = t.add_node(Node{fmt::format("g{}", h), NodeKind::gpu, h, {}});
    const NodeId n = t.add_node(Node{fmt::format("n{}", h), NodeKind::nic, h, {}});
    t.add_link(Link{LinkKind::pcie, g, n, Bandwidth::GBps(16), 1, Time::ns(250), 1.0, 3, 16});
    t.add_link(Link{LinkKind::network, n, sw, Bandwidth::GBps(10), 1, Time::us(1), 1.0, 0, 0});
  }
  for (int h = 2; h < 4; ++h) t.add_node(Node{fmt::format("cpu{}", h), NodeKind::cpu, h, {}});
  const TopologySummary s = summarize(t);
  REQUIRE(s.bisection);
  CHECK(s.bisection->cut == "hosts 0 | hosts 1");
  CHECK(s.bisection->line_rate == Bandwidth::GBps(10));
}
