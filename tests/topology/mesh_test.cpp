#include "topology/mesh.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "tests/topology/test_util.h"

using namespace meshsim;
using namespace meshsim::topology;
using namespace meshsim::topology::test;
using Catch::Matchers::Contains;

namespace {
std::string name_at(const Topology& t, const DeviceMesh& m, int r, int c) {
  return t.node(m.at(r, c)).name;
}
}  // namespace

TEST_CASE("hosts= selects whole hosts, host-major", "[mesh]") {
  const Topology t = cluster("dgx-a100", 4);
  const DeviceMesh m = select_mesh(t, "hosts=0-1");
  CHECK(m.rows == 2);
  CHECK(m.cols == 8);
  CHECK(name_at(t, m, 0, 0) == "h0/gpu0");
  CHECK(name_at(t, m, 1, 7) == "h1/gpu7");
}

TEST_CASE("hosts= with gpus= selects a sub-grid, lists and ranges mix", "[mesh]") {
  const Topology t = cluster("dgx-a100", 4);
  const DeviceMesh m = select_mesh(t, "hosts=0-1,gpus=0-3");
  CHECK(m.rows == 2);
  CHECK(m.cols == 4);
  CHECK(name_at(t, m, 1, 3) == "h1/gpu3");
  const DeviceMesh n = select_mesh(t, "hosts=1,3,gpus=2,5-6");
  CHECK(n.rows == 2);
  CHECK(n.cols == 3);
  CHECK(name_at(t, n, 0, 0) == "h1/gpu2");
  CHECK(name_at(t, n, 1, 2) == "h3/gpu6");
}

TEST_CASE("awkward sizes: 5 hosts of 4 GPUs, reshaped", "[mesh]") {
  const Topology t = cluster("p3.8xlarge", 5);
  const DeviceMesh all = select_mesh(t, "all");
  CHECK(all.rows == 5);
  CHECK(all.cols == 4);
  const DeviceMesh m = select_mesh(t, "hosts=0-4,gpus=0-2,shape=3x5");  // 15 GPUs as 3 × 5
  CHECK(m.rows == 3);
  CHECK(m.cols == 5);
  // Row-major over the host-major order: (1, 0) is the 6th GPU = h1/gpu2.
  CHECK(name_at(t, m, 1, 0) == "h1/gpu2");
  const DeviceMesh six = select_mesh(t, "hosts=0-2,gpus=0-1,shape=1x6");
  CHECK(six.size() == 6);
  CHECK(name_at(t, six, 0, 5) == "h2/gpu1");
}

TEST_CASE("explicit device lists keep their order", "[mesh]") {
  const Topology t = cluster("p3.8xlarge", 5);
  const DeviceMesh m = select_mesh(t, "h4/gpu1,h0/gpu3,h2/gpu0");
  CHECK(m.rows == 1);
  CHECK(m.cols == 3);
  CHECK(name_at(t, m, 0, 0) == "h4/gpu1");
  CHECK(name_at(t, m, 0, 2) == "h2/gpu0");
  const DeviceMesh col = select_mesh(t, "h0/gpu0,h1/gpu0,h2/gpu0,shape=3x1");
  CHECK(col.rows == 3);
}

TEST_CASE("bad selectors say what is wrong", "[mesh]") {
  const Topology t = cluster("p3.8xlarge", 5);
  CHECK_THROWS_WITH(select_mesh(t, "hosts=7"), Contains("host 7 does not exist"));
  CHECK_THROWS_WITH(select_mesh(t, "hosts=0,gpus=4"), Contains("no host has a GPU 4"));
  // Huge ranges are refused before they are expanded (no 2-billion-entry list).
  CHECK_THROWS_WITH(select_mesh(t, "hosts=0-2000000000"), Contains("host 2000000000 does not exist"));
  CHECK_THROWS_WITH(select_mesh(t, "hosts=0,gpus=0-2147483647"), Contains("no host has a GPU 2147483647"));
  CHECK_THROWS_WITH(select_mesh(t, "hosts=0-1,shape=3x3"), Contains("does not hold the 8 selected GPUs"));
  CHECK_THROWS_WITH(select_mesh(t, "racks=0"), Contains("unknown key \"racks\""));
  CHECK_THROWS_WITH(select_mesh(t, "h0/gpu0,h0/gpu0"), Contains("appears twice"));
  CHECK_THROWS_WITH(select_mesh(t, "h0/gpu0,hosts=1"), Contains("cannot be mixed"));
  CHECK_THROWS_WITH(select_mesh(t, "h0/nic0"), Contains("is not a GPU"));
  CHECK_THROWS_WITH(select_mesh(t, "hosts=3-1"), Contains("range \"3-1\" is empty"));
  CHECK_THROWS_WITH(select_mesh(t, "hosts=a"), Contains("not a non-negative integer"));
  CHECK_THROWS_AS(select_mesh(t, ""), UsageError);
}

TEST_CASE("hosts of different sizes need gpus= to form a grid", "[mesh]") {
  // Host a has 2 GPUs, host b has 1: hosts=0-1 is ragged; gpus=0 is a 2 x 1 grid;
  // gpus=1 exists on a only.
  Topology t;
  t.add_host(Host{"a", ""});
  t.add_host(Host{"b", ""});
  t.add_node(Node{"a/gpu0", NodeKind::gpu, 0, {}});
  t.add_node(Node{"a/gpu1", NodeKind::gpu, 0, {}});
  t.add_node(Node{"b/gpu0", NodeKind::gpu, 1, {}});
  CHECK_THROWS_WITH(select_mesh(t, "hosts=0-1"), Contains("different GPU counts"));
  CHECK(select_mesh(t, "hosts=0-1,gpus=0").rows == 2);
  CHECK_THROWS_WITH(select_mesh(t, "hosts=0-1,gpus=1"), Contains("host 1 has no GPU 1"));
}
