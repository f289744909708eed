// Clusters of a host described in a file (ClusterSpec::host_file, the
// cluster form's "host": "file.json").
#include <filesystem>
#include <fstream>
#include <memory>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/json.h"
#include "hardware/hosts.h"
#include "tests/topology/test_util.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::topology;
using Catch::Matchers::Contains;

namespace {

// One preset host, alone (no fabric), named as an imported host would be.
std::shared_ptr<const Topology> lone_host(const std::string& preset) {
  Topology t;
  t.name = "lone";
  add_preset_host(t, *hardware::find_host_preset(preset));
  return std::make_shared<const Topology>(topology_from_json(topology_to_json(t), "lone.json"));
}

ClusterSpec file_spec(const std::string& preset, int hosts, FabricKind fabric) {
  const hardware::HostPreset& p = *hardware::find_host_preset(preset);
  ClusterSpec s;
  s.host_preset = "lone.json";
  s.host_file = lone_host(preset);
  s.hosts = hosts;
  s.fabric.kind = fabric;
  s.nic_bandwidth = p.nic_bandwidth;
  s.nic_latency = p.nic_latency;
  s.nic_efficiency = p.nic_efficiency;
  return s;
}

// The topology's nodes and links, without its name, description or presets.
Json body(const Topology& t) {
  Json j = topology_to_json(t);
  for (auto& h : j["hosts"]) h.erase("preset");
  j.erase("name");
  j.erase("description");
  return j;
}

}  // namespace

TEST_CASE("a host file repeated is the preset cluster, node for node and link for link", "[cluster]") {
  // A DGX H100 host written alone and repeated 4 times on a rail fabric with
  // the preset's NIC figures must give exactly the preset's cluster.
  for (FabricKind f : {FabricKind::single_switch, FabricKind::fat_tree, FabricKind::rail}) {
    const Topology from_file = build_cluster(file_spec("dgx-h100", 4, f));
    const Topology preset = test::cluster("dgx-h100", 4, f);
    CHECK(body(from_file) == body(preset));
  }
}

TEST_CASE("a host file cluster needs the NICs' network figures and one host alone", "[cluster]") {
  ClusterSpec s = file_spec("p3.16xlarge", 2, FabricKind::single_switch);
  s.nic_latency.reset();
  CHECK_THROWS_WITH(build_cluster(s), Contains("needs \"nic_latency\""));
  s = file_spec("p3.16xlarge", 2, FabricKind::single_switch);
  s.nic_bandwidth.reset();
  CHECK_THROWS_WITH(build_cluster(s), Contains("needs \"nic_bandwidth\""));
  // Two hosts in the file: which one to repeat is not said.
  s = file_spec("p3.16xlarge", 2, FabricKind::single_switch);
  s.host_file = std::make_shared<const Topology>(test::cluster("p3.16xlarge", 2));
  CHECK_THROWS_WITH(build_cluster(s), Contains("describes 2 hosts"));
  // One host with its switch: the fabric is the cluster's to add.
  s.host_file = std::make_shared<const Topology>(test::cluster("p3.16xlarge", 1));
  CHECK_THROWS_WITH(build_cluster(s), Contains("outside its host"));
}

TEST_CASE("the cluster form reads a host file relative to itself", "[cluster][json]") {
  const auto dir = std::filesystem::temp_directory_path() / "meshsim-host-file-test";
  std::filesystem::create_directories(dir);
  Topology lone;
  lone.name = "my-node";
  add_preset_host(lone, *hardware::find_host_preset("p3.8xlarge"));
  std::ofstream(dir / "node.json") << topology_to_json(lone).dump();
  const std::string text = R"({"format": "meshsim.topology/1", "cluster": {"host": "node.json", "hosts": 3,
      "nic_bandwidth": "10Gbps", "nic_latency": "1us"}})";
  const Topology t = topology_from_json(Json::parse(text), (dir / "cluster.json").string());
  CHECK(t.host_count() == 3);
  CHECK(t.gpus().size() == 12);
  CHECK(t.name == "my-node-x3");
  // Hand-written NIC links default to the full line rate.
  for (const Link& l : t.links())
    if (l.kind == LinkKind::network) CHECK(l.efficiency == 1.0);
  const std::string missing = R"({"format": "meshsim.topology/1", "cluster": {"host": "none.json", "hosts": 2,
      "nic_bandwidth": "10Gbps", "nic_latency": "1us"}})";
  CHECK_THROWS_WITH(topology_from_json(Json::parse(missing), (dir / "c.json").string()),
                    Contains("cluster.host: cannot read the host file"));
  std::filesystem::remove_all(dir);
}
