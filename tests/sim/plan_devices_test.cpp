#include "sim/plan_devices.h"

#include <catch2/catch.hpp>

#include "topology/cluster.h"

using namespace meshsim;

TEST_CASE("a planner's device table adds each GPU once and keeps the plan's own", "[planner]") {
  // Two p3.8xlarge hosts. The plan already names h1/gpu2 (index 0); the
  // table then adds h0/gpu1 (1) and h1/gpu0 (2), in the order asked.
  topology::ClusterSpec s;
  s.host_preset = "p3.8xlarge";
  s.hosts = 2;
  const topology::Topology t = topology::build_cluster(s);
  plan::Plan p;
  p.devices = {"h1/gpu2"};
  sim::PlanDevices device(t, p);
  CHECK(device(t.at("h0/gpu1")) == 1);
  CHECK(device(t.at("h1/gpu2")) == 0);
  CHECK(device(t.at("h1/gpu0")) == 2);
  CHECK(device(t.at("h0/gpu1")) == 1);
  CHECK(p.devices == std::vector<std::string>{"h1/gpu2", "h0/gpu1", "h1/gpu0"});
}
