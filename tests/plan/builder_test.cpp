#include "plan/builder.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "plan/plan_json.h"

using namespace meshsim;
using namespace meshsim::plan;

namespace {

// A fragment on its own devices {b, a}: tensor T (4 f32), a source buffer on
// b, a destination on a, and one send b -> a moving all of T.
Plan fragment() {
  Plan f;
  f.devices = {"b", "a"};
  f.tensors.push_back({"T", {4}, DType::f32});
  f.buffers.push_back({"src", 0, Bytes(16), 0, {{0, 4}}});
  f.buffers.push_back({"dst", 1, Bytes(16), 0, {{0, 4}}});
  Task t;
  t.id = "send";
  t.kind = TaskKind::send;
  t.devices = {0, 1};
  t.size = Bytes(16);
  t.payload.push_back({0, {{0, 4}}, 0, Bytes(0), 1, Bytes(0)});
  f.tasks.push_back(t);
  return f;
}

}  // namespace

TEST_CASE("device_index names each device once", "[plan][builder]") {
  Plan p;
  CHECK(device_index(p, "x") == 0);
  CHECK(device_index(p, "y") == 1);
  CHECK(device_index(p, "x") == 0);
  CHECK(p.devices == std::vector<std::string>{"x", "y"});
}

TEST_CASE("stamping moves a fragment's indices into the plan", "[plan][builder]") {
  // The plan already has device a (index 0), a tensor and a buffer. The
  // fragment's b is new (index 1), its a is the plan's 0; its tensor lands
  // at 1 and its buffers at 1 and 2, under the prefix.
  Plan p;
  p.devices = {"a"};
  p.tensors.push_back({"U", {2}, DType::f32});
  p.buffers.push_back({"u", 0, Bytes(8), 0, {{0, 2}}});
  const Plan f = fragment();
  Stamp s;
  for (const std::string& d : f.devices) s.devices.push_back(device_index(p, d));
  CHECK(s.devices == std::vector<std::size_t>{1, 0});
  CHECK(p.devices == std::vector<std::string>{"a", "b"});
  s = stamp_names(p, f, "m0", s);
  CHECK(s.tensors == 1);
  CHECK(s.buffers == 1);
  REQUIRE(p.buffers.size() == 3);
  CHECK(p.tensors[1].name == "m0/T");
  CHECK(p.buffers[1].name == "m0/src");
  CHECK(p.buffers[1].device == 1);  // b
  CHECK(p.buffers[2].device == 0);  // a
  CHECK(p.buffers[2].tensor == std::optional<std::size_t>(1));
  Task t = f.tasks[0];
  stamp_task(t, s);
  CHECK(t.devices == std::vector<std::size_t>{1, 0});
  REQUIRE(t.payload.size() == 1);
  CHECK(t.payload[0].tensor == 1);
  CHECK(t.payload[0].src_buffer == 1);
  CHECK(t.payload[0].dst_buffer == 2);
  p.tasks.push_back(t);
  // The result is a valid plan: written out and read back, the send's
  // buffers are on its own devices.
  const Plan back = plan_from_json(plan_to_json(p), "stamped");
  CHECK(back.buffers[back.tasks[0].payload[0].dst_buffer].name == "m0/dst");
}

TEST_CASE("a sum payload gives every member its part and its sum of all parts", "[plan][builder]") {
  // 3 members, 5 elements of bf16: 3 part buffers, 3 sum buffers, 3 x 3 sum
  // regions; sum k on member k adds part j (on member j) for every j.
  Plan p;
  p.devices = {"g0", "g1", "g2"};
  Task ar;
  ar.id = "ar";
  ar.kind = TaskKind::collective;
  ar.op = CollectiveOp::all_reduce;
  ar.devices = {2, 0, 1};
  ar.size = Bytes(10);
  add_sum_payload(p, ar, "grad", DType::bf16, 5);
  REQUIRE(p.tensors.size() == 1);
  CHECK(p.tensors[0].parts == 3);
  REQUIRE(p.buffers.size() == 6);
  REQUIRE(ar.payload.size() == 9);
  for (const Region& r : ar.payload) {
    CHECK(r.reduce);
    CHECK(p.buffers[r.src_buffer].part >= 0);
    CHECK(p.buffers[r.dst_buffer].part < 0);
  }
  // Member 0 of the task is device 2 (g2): its part and its sum live there.
  CHECK(p.buffers[0].device == 2);
  CHECK(p.buffers[1].device == 2);
  CHECK(p.buffers[ar.payload[0].dst_buffer].name == "grad/sum0");
  p.tasks.push_back(ar);
  CHECK_NOTHROW(plan_from_json(plan_to_json(p), "sum"));
}

TEST_CASE("an index out of range in a built plan is an internal error", "[plan][builder]") {
  Plan p = fragment();
  CHECK_NOTHROW(check_indices(p));
  p.tasks[0].devices[1] = 7;
  CHECK_THROWS_AS(check_indices(p), InternalError);
  p = fragment();
  p.tasks[0].payload[0].dst_buffer = 2;
  CHECK_THROWS_AS(check_indices(p), InternalError);
}
