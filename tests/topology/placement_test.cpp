#include "topology/placement.h"

#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "tests/topology/test_util.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::topology;
using namespace meshsim::topology::test;
using Catch::Matchers::Contains;

TEST_CASE("a placement is read from its text and written back the same", "[placement]") {
  CHECK(parse_placement("contiguous") == Placement{});
  CHECK(parse_placement("spread").kind == PlacementKind::spread);
  CHECK(parse_placement("random") == Placement{PlacementKind::random, 1, {}});
  CHECK(parse_placement("random:7") == Placement{PlacementKind::random, 7, {}});
  const Placement listed = parse_placement("hosts=8-11,0-3,6");
  CHECK(listed.hosts == std::vector<int>{8, 9, 10, 11, 0, 1, 2, 3, 6});
  for (const char* text : {"contiguous", "spread", "random:7", "hosts=8-11,0-3,6"})
    CHECK(to_string(parse_placement(text)) == text);
  // Mistakes name the text and what is wrong with it.
  CHECK_THROWS_WITH(parse_placement("packed"), Contains("bad placement \"packed\": unknown kind \"packed\""));
  CHECK_THROWS_WITH(parse_placement("spread:3"), Contains("only random takes a seed"));
  CHECK_THROWS_WITH(parse_placement("random:x"), Contains("\"x\" is not a non-negative integer"));
  CHECK_THROWS_WITH(parse_placement("hosts=3-1"), Contains("range \"3-1\" is empty"));
  CHECK_THROWS_WITH(parse_placement("hosts"), Contains("hosts needs a list"));
  CHECK_THROWS_WITH(parse_placement("hosts=0-99999"), Contains("past the 16384 hosts"));
  CHECK_THROWS_WITH(parse_placement("spread=1"), Contains("only hosts takes a list"));
}

TEST_CASE("contiguous takes the first hosts, spread spaces them evenly", "[placement]") {
  CHECK(placed_hosts(Placement{}, 8, 3) == std::vector<int>{0, 1, 2});
  // ⌊k·H/n⌋: 64 hosts, 16 of them: every fourth; 10 hosts, 4: 0, 2.5, 5, 7.5 rounded down.
  const Placement spread{PlacementKind::spread, 1, {}};
  const auto every_fourth = placed_hosts(spread, 64, 16);
  CHECK(every_fourth.front() == 0);
  CHECK(every_fourth[1] == 4);
  CHECK(every_fourth.back() == 60);
  CHECK(placed_hosts(spread, 10, 4) == std::vector<int>{0, 2, 5, 7});
  CHECK(placed_hosts(spread, 4, 4) == std::vector<int>{0, 1, 2, 3});  // a full cluster: contiguous
  CHECK_THROWS_WITH(placed_hosts(spread, 4, 5), Contains("the job needs 5 hosts and the cluster has 4"));
}

TEST_CASE("random draws distinct hosts, the same for a seed, a smaller job a prefix", "[placement]") {
  const Placement one{PlacementKind::random, 1, {}};
  const auto all = placed_hosts(one, 64, 64);
  std::set<int> distinct(all.begin(), all.end());
  CHECK(distinct.size() == 64);
  CHECK(*distinct.begin() == 0);
  CHECK(*distinct.rbegin() == 63);
  CHECK(all != placed_hosts(Placement{}, 64, 64));  // shuffled
  CHECK(placed_hosts(one, 64, 64) == all);          // the same draw every time
  // The draw stops after the job's hosts: 16 hosts are the first 16 of 64.
  const auto sixteen = placed_hosts(one, 64, 16);
  CHECK(std::equal(sixteen.begin(), sixteen.end(), all.begin()));
  CHECK(placed_hosts(Placement{PlacementKind::random, 2, {}}, 64, 64) != all);
}

TEST_CASE("a listed placement is refused when it repeats, overruns or falls short", "[placement]") {
  CHECK(placed_hosts(parse_placement("hosts=3,1,2"), 4, 2) == std::vector<int>{3, 1});
  CHECK_THROWS_WITH(placed_hosts(parse_placement("hosts=1,1"), 4, 2), Contains("host 1 is listed twice"));
  CHECK_THROWS_WITH(placed_hosts(parse_placement("hosts=0,4"), 4, 2),
                    Contains("host 4 is past the cluster's 4 hosts"));
  CHECK_THROWS_WITH(placed_hosts(parse_placement("hosts=0,1"), 4, 3),
                    Contains("placement hosts=0-1 lists 2 hosts and the job needs 3"));
}

TEST_CASE("placing a job renumbers the hosts, its own first, and keeps names and routes", "[placement]") {
  Topology t = cluster("dgx-h100", 4, FabricKind::fat_tree);
  const Route before = t.route(t.at("h2/gpu0"), t.at("h0/gpu0"));
  const std::string path = path_of(t, before);
  place(t, parse_placement("hosts=2,0"), 2);
  // Rank order: h2's GPUs, then h0's, then the rest in index order (h1, h3).
  CHECK(t.hosts()[0].name == "h2");
  CHECK(t.hosts()[1].name == "h0");
  CHECK(t.hosts()[2].name == "h1");
  CHECK(t.node(t.gpus()[0]).name == "h2/gpu0");
  CHECK(t.node(t.gpus()[8]).name == "h0/gpu0");
  CHECK(t.node(t.gpus()[16]).name == "h1/gpu0");
  CHECK(t.node(t.at("h2/gpu5")).host == 0);
  CHECK(t.node(t.host_gpus(1)[3]).name == "h0/gpu3");
  CHECK(t.node(t.host_nics(0)[0]).name.starts_with("h2/"));
  CHECK(path_of(t, t.route(t.at("h2/gpu0"), t.at("h0/gpu0"))) == path);
  CHECK(t.route(t.at("h2/gpu0"), t.at("h0/gpu0")).latency == before.latency);
}

TEST_CASE("a job's hosts are those holding its GPUs, and a placed job says where it landed", "[placement]") {
  Topology t = cluster("dgx-h100", 4);
  CHECK(hosts_for_gpus(t, 8) == 1);
  CHECK(hosts_for_gpus(t, 9) == 2);
  CHECK(hosts_for_gpus(t, 32) == 4);
  CHECK_THROWS_WITH(hosts_for_gpus(t, 33), Contains("33 GPUs, but"));
  CHECK(place_job(t, 2).empty());  // contiguous: nothing to say
  t.placement = "hosts=3,1";
  CHECK(place_job(t, 2) == "hosts=3,1: h3 h1 (2 of 4 hosts)");
  CHECK(t.node(t.gpus()[0]).name == "h3/gpu0");
}

TEST_CASE("a topology file may name its jobs' placement", "[placement]") {
  Json j = topology_to_json(cluster("dgx-h100", 2));
  j["placement"] = "random:3";
  CHECK(topology_from_json(j, "t.json").placement == "random:3");
  CHECK(topology_to_json(topology_from_json(j, "t.json"))["placement"] == "random:3");
  j["placement"] = "scattered";
  CHECK_THROWS_WITH(topology_from_json(j, "t.json"),
                    Contains("t.json: placement: bad placement \"scattered\""));
}
