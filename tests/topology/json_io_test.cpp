#include <filesystem>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "hardware/hosts.h"
#include "tests/topology/test_util.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::topology;
using namespace meshsim::topology::test;

namespace {
std::string export_text(const Topology& t) {
  return dump_json(topology_to_json(t));
}
Topology reload(const std::string& text) {
  return topology_from_json(parse_json_text(text, "export.json"), "export.json");
}
}  // namespace

TEST_CASE("export -> load -> export gives the same bytes for every preset and fabric", "[json]") {
  for (const hardware::HostPreset& p : hardware::host_presets()) {
    for (FabricKind f : {FabricKind::single_switch, FabricKind::fat_tree, FabricKind::rail}) {
      ClusterSpec s;
      s.host_preset = std::string(p.name);
      s.hosts = 3;
      s.fabric.kind = f;
      s.fabric.nics_per_leaf = 5;     // leaves that split hosts
      s.fabric.hosts_per_unit = 2;    // two rail units
      s.fabric.oversubscription = 3;  // uplinks that are not whole NIC lanes
      INFO(p.name << " " << to_string(f));
      const Topology t = build_cluster(s);
      const std::string once = export_text(t);
      const Topology back = reload(once);
      CHECK(export_text(back) == once);
      CHECK(back.node_count() == t.node_count());
      CHECK(back.link_count() == t.link_count());
      // The reloaded topology routes the same way.
      const NodeId a = t.gpus().front();
      const NodeId b = t.gpus().back();
      CHECK(path_of(back, back.route(a, b)) == path_of(t, t.route(a, b)));
      CHECK(back.route(a, b).latency == t.route(a, b).latency);
      CHECK(back.route(a, b).bottleneck == t.route(a, b).bottleneck);
    }
  }
}

TEST_CASE("every bundled topology config loads and round-trips", "[json][configs]") {
  const std::filesystem::path dir = std::filesystem::path(MESHSIM_SOURCE_DIR) / "configs" / "topologies";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    INFO(entry.path().string());
    const Topology t = load_topology_file(entry.path().string());
    const std::string once = export_text(t);
    CHECK(export_text(reload(once)) == once);
  }
  CHECK(files >= 4);
}

TEST_CASE("bundled configs describe the clusters of the reference", "[json][configs]") {
  const std::string dir = std::string(MESHSIM_SOURCE_DIR) + "/configs/topologies/";
  // Alpa's resharding microbenchmark: 5 × p3.8xlarge, 10 Gb/s, one switch.
  const Topology alpa = load_topology_file(dir + "p3.8xlarge-x5.json");
  CHECK(alpa.host_count() == 5);
  CHECK(alpa.gpus().size() == 20);
  CHECK(alpa.route(alpa.at("h0/gpu0"), alpa.at("h1/gpu0")).bottleneck == Bandwidth::Gbps(9));
  // TeraPipe: 48 × p3.16xlarge at 25 Gb/s.
  const Topology tera = load_topology_file(dir + "p3.16xlarge-x48.json");
  CHECK(tera.gpus().size() == 384);
  // 32 × DGX-H100 on 400 Gb/s rails: 8 leaves, 4 spines.
  const Topology h = load_topology_file(dir + "dgx-h100-x32-rail.json");
  CHECK(h.gpus().size() == 256);
  CHECK(h.find("leaf7").has_value());
  CHECK_FALSE(h.find("leaf8").has_value());
  CHECK(h.find("spine3").has_value());
  CHECK_FALSE(h.find("spine4").has_value());
}

TEST_CASE("a hand-written explicit topology loads and routes", "[json]") {
  // Two single-GPU hosts, each GPU on PCIe Gen4 x16 with a NIC, one switch.
  const char* text = R"({
    "format": "meshsim.topology/1",
    "name": "tiny",
    "hosts": [{"name": "a"}, {"name": "b"}],
    "nodes": [
      {"name": "a/gpu", "kind": "gpu", "host": "a", "model": "A100"},
      {"name": "a/nic", "kind": "nic", "host": "a"},
      {"name": "b/gpu", "kind": "gpu", "host": "b"},
      {"name": "b/nic", "kind": "nic", "host": "b"},
      {"name": "sw", "kind": "switch"}
    ],
    "links": [
      {"kind": "pcie", "a": "a/gpu", "b": "a/nic", "gen": 4, "width": 16, "latency": "250ns", "efficiency": 0.75},
      {"kind": "pcie", "a": "b/gpu", "b": "b/nic", "gen": 4, "width": 16, "latency": "250ns"},
      {"kind": "network", "a": "a/nic", "b": "sw", "bandwidth": "100Gbps", "latency": "1us"},
      {"kind": "network", "a": "b/nic", "b": "sw", "bandwidth": "200Gbps", "latency": "1us"}
    ]
  })";
  const Topology t = topology_from_json(parse_json_text(text, "tiny.json"), "tiny.json");
  // PCIe bandwidth derived from gen × width: Gen4 = 2 GB/s per lane -> 32 GB/s.
  CHECK(t.link(0).bandwidth == Bandwidth::GBps(32));
  CHECK(t.link(1).efficiency == 1.0);  // efficiency defaults to 1
  const Route& r = t.route(t.at("a/gpu"), t.at("b/gpu"));
  CHECK(path_of(t, r) == "a/gpu a/nic sw b/nic b/gpu");
  CHECK(r.bottleneck == Bandwidth::Gbps(100));
  CHECK(r.latency == Time::ns(2500));
}

TEST_CASE("a cluster file may override the NIC rate and latency", "[json]") {
  const char* text = R"({"format": "meshsim.topology/1", "name": "x",
    "cluster": {"host": "dgx-a100", "hosts": 2, "fabric": {"kind": "rail"},
                "nic_bandwidth": "400Gbps", "nic_latency": "2us"}})";
  const Topology t = topology_from_json(parse_json_text(text, "c.json"), "c.json");
  const Route& r = t.route(t.at("h0/gpu0"), t.at("h1/gpu0"));
  CHECK(switches_on(t, r) == 1);
  CHECK(t.link(r.hops[2].link).bandwidth == Bandwidth::Gbps(400));
  CHECK(t.link(r.hops[2].link).latency == Time::us(2));
  CHECK(t.name == "x");
}

TEST_CASE("an NVLink may join a GPU and its own CPU (POWER9, Grace)", "[json]") {
  // Two GPUs, each with 3 NVLink lanes to the CPU and PCIe Gen3 x16 to it,
  // no NVLink between them. GPU traffic is never forwarded by a CPU over
  // NVLink: gpu0 -> gpu1 goes over PCIe (2 hops, 16 GB/s x 0.75 = 12 GB/s).
  const char* text = R"({
    "format": "meshsim.topology/1",
    "hosts": [{"name": "p9"}],
    "nodes": [
      {"name": "p9/gpu0", "kind": "gpu", "host": "p9"},
      {"name": "p9/gpu1", "kind": "gpu", "host": "p9"},
      {"name": "p9/cpu0", "kind": "cpu", "host": "p9"}
    ],
    "links": [
      {"kind": "nvlink", "a": "p9/gpu0", "b": "p9/cpu0", "count": 3, "bandwidth": "25GBps", "latency": "500ns"},
      {"kind": "nvlink", "a": "p9/cpu0", "b": "p9/gpu1", "count": 3, "bandwidth": "25GBps", "latency": "500ns"},
      {"kind": "pcie", "a": "p9/gpu0", "b": "p9/cpu0", "gen": 3, "width": 16, "latency": "250ns", "efficiency": 0.75},
      {"kind": "pcie", "a": "p9/gpu1", "b": "p9/cpu0", "gen": 3, "width": 16, "latency": "250ns", "efficiency": 0.75}
    ]
  })";
  const Topology t = topology_from_json(parse_json_text(text, "p9.json"), "p9.json");
  const Route& r = t.route(t.at("p9/gpu0"), t.at("p9/gpu1"));
  CHECK(path_of(t, r) == "p9/gpu0 p9/cpu0 p9/gpu1");
  for (const Hop& h : r.hops) CHECK(t.link(h.link).kind == LinkKind::pcie);
  CHECK(r.bottleneck == Bandwidth::GBps(12));
  CHECK(reload(export_text(t)).link_count() == 4);

  // An NVLink between two CPUs is still an error.
  const char* cpus = R"({"format": "meshsim.topology/1", "hosts": [{"name": "h"}],
    "nodes": [{"name": "c0", "kind": "cpu", "host": "h"}, {"name": "c1", "kind": "cpu", "host": "h"}],
    "links": [{"kind": "nvlink", "a": "c0", "b": "c1", "bandwidth": "25GBps", "latency": "1us"}]})";
  CHECK_THROWS_WITH(
      topology_from_json(parse_json_text(cpus, "c.json"), "c.json"),
      Catch::Contains("links[0].kind: an nvlink joins GPUs and NVSwitches (or a GPU and its CPU)"));
}

TEST_CASE("a cluster file may give a fat tree pods and a core", "[json]") {
  const char* text = R"({"format": "meshsim.topology/1", "name": "x",
    "cluster": {"host": "dgx-a100", "hosts": 8,
                "fabric": {"kind": "fat-tree", "nics_per_leaf": 8, "leaves_per_pod": 2, "cores": 4,
                           "core_oversubscription": 2}}})";
  const Topology t = topology_from_json(parse_json_text(text, "c.json"), "c.json");
  CHECK(t.description.find(
            "4 pods x 2 leaves x 8 NICs, 8 spines per pod (1:1 oversubscribed), 4 cores (2:1)") !=
        std::string::npos);
  CHECK(switches_on(t, t.route(t.at("h0/gpu0"), t.at("h7/gpu0"))) == 5);

  const char* bad = R"({"format": "meshsim.topology/1",
    "cluster": {"host": "dgx-a100", "hosts": 8,
                "fabric": {"kind": "fat-tree", "leaves_per_pod": 2, "core_oversubscription": 0.5}}})";
  CHECK_THROWS_WITH(topology_from_json(parse_json_text(bad, "c.json"), "c.json"),
                    Catch::Contains("cluster.fabric.core_oversubscription: core_oversubscription must be "
                                    "between 1 and 1024, got 0.5"));
}
