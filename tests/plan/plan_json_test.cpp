#include "plan/plan_json.h"

#include <sstream>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "plan/json_fields.h"

using namespace meshsim;
using namespace meshsim::plan;
using Catch::Matchers::Contains;

namespace {

// A plan with one of each task kind and a payload: W (1024 x 1024 f32,
// 4 MiB) split in two row halves; h0/gpu0 sends the top half to h1/gpu0.
const char* kPlan = R"({
  "format": "meshsim.plan/1",
  "name": "one-of-each",
  "tensors": [{"name": "W", "shape": [1024, 1024], "dtype": "f32"}],
  "buffers": [
    {"name": "w0", "device": "h0/gpu0", "size": "4MiB"},
    {"name": "w1", "device": "h1/gpu0", "size": "2MiB"}
  ],
  "tasks": [
    {"id": "fwd", "kind": "compute", "device": "h0/gpu0", "flops": 1e12, "bytes": "1GB", "dtype": "bf16"},
    {"id": "xfer", "kind": "send", "src": "h0/gpu0", "dst": "h1/gpu0", "size": "2MiB", "deps": ["fwd"],
     "payload": [{"tensor": "W", "box": [[0, 512], [0, 1024]], "src_buffer": "w0", "src_offset": "0B",
                  "dst_buffer": "w1", "dst_offset": "0B"}]},
    {"id": "bc", "kind": "broadcast", "root": "h0/gpu0", "receivers": ["h0/gpu1", "h1/gpu1"], "size": "64MiB",
     "chunk": "512KiB", "deps": ["fwd"], "stream": 1},
    {"id": "ar", "kind": "collective", "op": "all_reduce", "group": ["h0/gpu0", "h0/gpu1", "h1/gpu0"],
     "size": "1GiB", "algorithm": "ring", "deps": ["xfer", "bc"]},
    {"id": "tail", "kind": "compute", "device": "h1/gpu0", "duration": "1.5ms", "deps": ["ar"]}
  ]
})";

Plan parse(const std::string& text) {
  return plan_from_json(parse_json_text(text, "p.json"), "p.json");
}

ConfigError plan_error(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("plan accepted");
  throw;
}

// `s` with the first occurrence of `from` replaced by `to`.
std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  return s.replace(pos, from.size(), to);
}

// kPlan with the first occurrence of `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  return replaced(kPlan, from, to);
}

// A mistake made by replacing `from` with `to`, and where and how the
// loader names it.
struct BadEdit {
  std::string from, to, path, fragment;
};

// Each edit of `base` is refused at its JSON path with a message naming it.
void check_refused(const std::string& base, const std::vector<BadEdit>& edits) {
  for (const BadEdit& c : edits) {
    INFO(c.to);
    const ConfigError e = plan_error(replaced(base, c.from, c.to));
    CHECK(e.json_path() == c.path);
    CHECK_THAT(e.message(), Contains(c.fragment));
  }
}

}  // namespace

TEST_CASE("a plan reads, and writes back losslessly", "[plan]") {
  const Plan p = parse(kPlan);
  REQUIRE(p.tasks.size() == 5);
  CHECK(p.tasks[1].size == Bytes::MiB(2));
  CHECK(p.tasks[1].deps == std::vector<std::size_t>{0});
  const auto& g = p.tasks[2].devices;
  REQUIRE(g.size() == 3);
  CHECK(p.devices[g[0]] == "h0/gpu0");
  CHECK(p.devices[g[1]] == "h0/gpu1");
  CHECK(p.devices[g[2]] == "h1/gpu1");
  CHECK(p.tasks[2].stream == 1);
  CHECK(p.tasks[3].op == CollectiveOp::all_reduce);
  CHECK(*p.tasks[4].duration == Time::us(1500));
  CHECK(region_bytes(p, p.tasks[1].payload[0]) == Bytes::MiB(2));
  const std::string once = dump_json(plan_to_json(p));
  const Plan back = parse(once);
  CHECK(dump_json(plan_to_json(back)) == once);
  // Streamed a task at a time, the same text; and with no tasks at all.
  std::ostringstream streamed;
  write_plan_json(p, streamed);
  CHECK(streamed.str() == once);
  Plan none = p;
  none.tasks.clear();
  std::ostringstream empty;
  write_plan_json(none, empty);
  CHECK(empty.str() == dump_json(plan_to_json(none)));
}

TEST_CASE("a compute task on several devices reads and writes back as a list", "[plan]") {
  const Plan p =
      parse(edited(R"("device": "h1/gpu0", "duration")", R"("devices": ["h1/gpu0", "h0/gpu1"], "duration")"));
  REQUIRE(p.tasks[4].devices.size() == 2);
  CHECK(p.devices[p.tasks[4].devices[1]] == "h0/gpu1");
  const Json j = plan_to_json(p);
  CHECK(j["tasks"][4]["devices"] == Json::array({"h1/gpu0", "h0/gpu1"}));
  CHECK_FALSE(j["tasks"][4].contains("device"));
  const std::string once = dump_json(j);
  CHECK(dump_json(plan_to_json(parse(once))) == once);
  // One device is still written as "device".
  CHECK(plan_to_json(parse(kPlan))["tasks"][4]["device"] == "h1/gpu0");
}

TEST_CASE("kernel sets: a compute task names its kernels, flops and bytes default to their totals",
          "[plan]") {
  // Set "mlp": GEMMs 128 x 4096 x 1024 and a batch of 8 products
  // 64 x 64 x 32, one memory-bound kernel of 2 MiB:
  //   flops = 2·128·4096·1024 + 8·2·64·64·32 = 1,073,741,824 + 2,097,152
  //   bytes = 2 MiB.
  const std::string sets = R"("kernel_sets": [{"name": "mlp", "dtype": "bf16",
      "gemms": [[128, 4096, 1024], [64, 64, 32, 8]], "memory_bytes": ["2MiB"]}],
  "tasks": [)";
  const std::string text = edited(R"("tasks": [)", sets);
  std::string with_set = text;
  with_set.replace(with_set.find(R"("flops": 1e12, "bytes": "1GB")"), 29, R"("kernels": "mlp")");
  const Plan p = parse(with_set);
  REQUIRE(p.kernel_sets.size() == 1);
  const KernelList& k = p.kernel_sets[0].kernels;
  CHECK(k.dtype == DType::bf16);
  REQUIRE(k.gemms.size() == 2);
  CHECK(k.gemms[1].batch == 8);
  CHECK(p.tasks[0].kernels == std::optional<std::size_t>(0));
  CHECK(p.tasks[0].flops == 1'073'741'824.0 + 2'097'152.0);
  CHECK(p.tasks[0].mem_bytes == Bytes::MiB(2));
  check_indices(p);
  // Written out and read back, the same plan; a plan without sets writes none.
  const std::string once = dump_json(plan_to_json(p));
  CHECK(parse(once).kernel_sets == p.kernel_sets);
  CHECK(dump_json(plan_to_json(parse(once))) == once);
  CHECK_FALSE(plan_to_json(parse(kPlan)).contains("kernel_sets"));
  // Flops and bytes beside a set must be its totals: the simulator times
  // the set's kernels and the GPU backends run the task's FLOPs, so a
  // different figure would make the two disagree.
  std::string given = text;
  given.replace(given.find(R"("flops": 1e12, "bytes": "1GB")"), 29,
                R"("kernels": "mlp", "flops": 1075838976, "bytes": "2MiB")");
  CHECK(parse(given).tasks[0].flops == 1'075'838'976.0);
  std::string other_flops = given;
  other_flops.replace(other_flops.find("1075838976"), 10, "1e12");
  CHECK(plan_error(other_flops).json_path() == "tasks[0].flops");
  CHECK_THAT(plan_error(other_flops).message(), Contains("disagrees with kernel set \"mlp\""));
  std::string other_bytes = given;
  other_bytes.replace(other_bytes.find(R"("bytes": "2MiB")"), 15, R"("bytes": "1GB")");
  CHECK(plan_error(other_bytes).json_path() == "tasks[0].bytes");

  const std::vector<BadEdit> cases{
      {R"("kernels": "mlp")", R"("kernels": "attn")", "tasks[0].kernels", "unknown kernel set \"attn\""},
      {R"("kernels": "mlp")", R"("kernels": "mlp", "duration": "1ms")", "tasks[0].kernels", "not both"},
      {R"([64, 64, 32, 8])", R"([64, 0, 32])", "kernel_sets[0].gemms[1][1]", "between 0 and 2^40"},
      {R"([64, 64, 32, 8])", R"([64, 64])", "kernel_sets[0].gemms[1]", "[m, n, k]"},
      {R"(["2MiB"])", R"(["0B"])", "kernel_sets[0].memory_bytes[0]", "more than 0 bytes"},
      {R"([128, 4096, 1024])", R"([1e12, 1e12, 1e12, 1e6])", "kernel_sets[0]", "more than 1e30 FLOPs"},
      {R"("memory_bytes": ["2MiB"])", R"("bytes": ["2MiB"])", "kernel_sets[0].bytes", "unknown key"},
  };
  check_refused(with_set, cases);
}

TEST_CASE("kernel sets: fused attention kernels and host work per kernel read back as written", "[plan]") {
  // One forward attention kernel of 16 heads, 512 queries against 256 keys
  // of 128: 4·16·512·256·128 = 1,073,741,824 FLOPs; 20 us per launch.
  const std::string sets = R"("kernel_sets": [{"name": "attn", "dtype": "bf16",
      "attention": [{"batch": 16, "queries": 512, "keys": 256, "head_dim": 128, "pass": "forward"}],
      "gemms": [[128, 256, 64, 1, "fp8"]], "host_per_kernel": "20us"}],
  "tasks": [)";
  std::string text = edited(R"("tasks": [)", sets);
  text.replace(text.find(R"("flops": 1e12, "bytes": "1GB")"), 29, R"("kernels": "attn")");
  const Plan p = parse(text);
  const KernelList& k = p.kernel_sets[0].kernels;
  REQUIRE(k.attention.size() == 1);
  CHECK(k.attention[0] == KernelList::Attention{16, 512, 256, 128, false});
  CHECK(k.host_per_kernel == Time::us(20));
  REQUIRE(k.gemms.size() == 1);
  CHECK(k.gemms[0].fp8);
  CHECK(p.tasks[0].flops == 1'073'741'824.0 + 2.0 * 128 * 256 * 64);
  const std::string once = dump_json(plan_to_json(p));
  CHECK(parse(once).kernel_sets == p.kernel_sets);
  const std::vector<BadEdit> cases{
      {R"("pass": "forward")", R"("pass": "sideways")", "kernel_sets[0].attention[0].pass",
       "forward or backward"},
      {R"("keys": 256)", R"("keys": 0)", "kernel_sets[0].attention[0].keys", "between 0 and 2^40"},
      {R"("20us")", R"("2s")", "kernel_sets[0].host_per_kernel", "between 0 and 1 s"},
      {R"("fp8")", R"("fp4")", "kernel_sets[0].gemms[0][4]", "is \"fp8\""},
  };
  check_refused(text, cases);
}

TEST_CASE("a plan file names each device once, in the order it first names them", "[plan]") {
  // kPlan's buffers name h0/gpu0 and h1/gpu0; its tasks then add h0/gpu1 and
  // h1/gpu1 (the broadcast's receivers). Every reference is an index into
  // that table, so the send's buffers sit on its own two devices.
  const Plan p = parse(kPlan);
  CHECK(p.devices == std::vector<std::string>{"h0/gpu0", "h1/gpu0", "h0/gpu1", "h1/gpu1"});
  CHECK(p.buffers[1].device == 1);
  CHECK(p.tasks[1].devices == std::vector<std::size_t>{0, 1});
  CHECK(p.tasks[2].devices == std::vector<std::size_t>{0, 2, 3});
  const Region& r = p.tasks[1].payload[0];
  CHECK(r.tensor == 0);
  CHECK(r.src_buffer == 0);
  CHECK(r.dst_buffer == 1);
  check_indices(p);  // no InternalError
}

TEST_CASE("a loaded plan carries the schedule its loader made", "[plan]") {
  const LoadedPlan l = load_plan(MESHSIM_SOURCE_DIR "/configs/plans/two-stage-step.json");
  const Schedule again = make_schedule(l.plan, "again");
  CHECK(l.schedule.order == again.order);
  CHECK(l.schedule.preds == again.preds);
  CHECK(l.schedule.succs == again.succs);
}

TEST_CASE("malformed plans are rejected with their JSON path", "[plan][bad-input]") {
  const std::vector<BadEdit> cases{
      {R"("id": "tail")", R"("id": "fwd")", "tasks[4].id", "duplicate task id \"fwd\""},
      {R"("deps": ["ar"])", R"("deps": ["nope"])", "tasks[4].deps[0]", "unknown task \"nope\""},
      {R"("deps": ["fwd"],)", R"("deps": ["xfer"],)", "tasks[1].deps[0]", "cannot depend on itself"},
      {R"("dtype": "bf16"})", R"("dtype": "bf16", "deps": ["tail"]})", "tasks[0].deps",
       "dependency cycle: fwd -> tail -> ar -> xfer -> fwd"},
      {R"("size": "64MiB")", R"("size": "0B")", "tasks[2].size", "greater than zero"},
      {R"("size": "64MiB")", R"("size": "-5MiB")", "tasks[2].size", "negative"},
      {R"("size": "1GiB")", R"("size": 1024)", "tasks[3].size", "has no unit"},
      {R"("op": "all_reduce")", R"("op": "allreduce")", "tasks[3].op", "unknown collective \"allreduce\""},
      {R"("kind": "send")", R"("kind": "sendrecv")", "tasks[1].kind", "unknown task kind"},
      {R"("receivers": ["h0/gpu1", "h1/gpu1"])", R"("receivers": ["h0/gpu1", "h0/gpu1"])",
       "tasks[2].receivers[1]", "appears twice"},
      {R"("receivers": ["h0/gpu1", "h1/gpu1"])", R"("receivers": ["h0/gpu0"])", "tasks[2].receivers",
       "also a receiver"},
      {R"([[0, 512], [0, 1024]])", R"([[0, 512], [0, 2048]])", "tasks[1].payload[0].box[1]",
       "not a non-empty range"},
      {R"("dst_offset": "0B")", R"("dst_offset": "1MiB")", "tasks[1].payload[0].dst_buffer", "does not fit"},
      {R"("dst_offset": "0B")", R"("dst_offset": "9223372036854775807B")", "tasks[1].payload[0].dst_buffer",
       "does not fit"},
      {R"("src_buffer": "w0")", R"("src_buffer": "w1")", "tasks[1].payload[0].src_buffer",
       "is on h1/gpu0, not on h0/gpu0"},
      {R"("size": "2MiB", "deps")", R"("size": "3MiB", "deps")", "tasks[1].payload",
       "add up to 2MiB, but the task moves 3MiB"},
      {R"("duration": "1.5ms")", R"("duration": "1.5ms", "flops": 5)", "tasks[4].flops", "not both"},
      {R"("shape": [1024, 1024])", R"("shape": [1024, 0])", "tensors[0].shape[1]", "out of range"},
      {R"("format": "meshsim.plan/1")", R"("format": "meshsim.plan/2")", "format", "unsupported format"},
      {R"("name": "one-of-each")", R"("nmae": "one-of-each")", "nmae", "unknown key"},
      {R"("device": "h1/gpu0", "duration")", R"("device": "h1/gpu0", "devices": ["h0/gpu1"], "duration")",
       "tasks[4]", "not both"},
      {R"("device": "h1/gpu0", "duration")", R"("duration")", "tasks[4]", "needs \"device\""},
      {R"("device": "h1/gpu0", "duration")", R"("devices": [], "duration")", "tasks[4].devices",
       "at least 1"},
      {R"("device": "h1/gpu0", "duration")", R"("devices": ["h1/gpu0", "h1/gpu0"], "duration")",
       "tasks[4].devices[1]", "appears twice"},
  };
  check_refused(kPlan, cases);
}

TEST_CASE("sum payloads: parts, part buffers and reduce regions are checked", "[plan][bad-input]") {
  // G (8 x 4 f32) is the sum of 2 parts; p0, p1 hold them; s0 gets their sum.
  auto plan_text = [](const std::string& tensor_extra, const std::string& p1_extra, const std::string& kind,
                      const std::string& region2) {
    return R"({"format": "meshsim.plan/1",
      "tensors": [{"name": "G", "shape": [8, 4], "dtype": "f32")" +
           tensor_extra + R"(}],
      "buffers": [
        {"name": "p0", "device": "a", "size": "128B", "tensor": "G", "box": [[0, 8], [0, 4]], "part": 0},
        {"name": "p1", "device": "b", "size": "128B", "tensor": "G", "box": [[0, 8], [0, 4]])" +
           p1_extra + R"(},
        {"name": "s0", "device": "a", "size": "128B", "tensor": "G", "box": [[0, 8], [0, 4]]}],
      "tasks": [{"id": "ar", "kind": "collective", "op": ")" +
           kind + R"(", "group": ["a", "b"], "size": "128B", "payload": [
        {"tensor": "G", "box": [[0, 8], [0, 4]], "src_buffer": "p0", "dst_buffer": "s0", "reduce": "sum"},
        )" +
           region2 + "]}]}";
  };
  const std::string good_region =
      R"({"tensor": "G", "box": [[0, 8], [0, 4]], "src_buffer": "p1", "dst_buffer": "s0", "reduce": "sum"})";
  const Plan p = parse(plan_text(R"(, "parts": 2)", R"(, "part": 1)", "all_reduce", good_region));
  CHECK(p.tensors[0].parts == 2);
  CHECK(p.buffers[1].part == 1);
  CHECK(p.buffers[2].part == -1);
  CHECK(p.tasks[0].payload[1].reduce);
  CHECK(plan_to_json(parse(plan_to_json(p).dump())) == plan_to_json(p));

  struct Case {
    std::string text, path, fragment;
  };
  const std::vector<Case> cases{
      {plan_text("", R"(, "part": 1)", "all_reduce", good_region), "buffers[0].part", "not a sum of parts"},
      {plan_text(R"(, "parts": 2)", R"(, "part": 2)", "all_reduce", good_region), "buffers[1].part",
       "out of range"},
      {plan_text(R"(, "parts": 64)", "", "all_reduce", good_region), "tensors[0].parts", "out of range"},
      {plan_text(R"(, "parts": 2)", "", "all_reduce", good_region), "tasks[0].payload[1].src_buffer",
       "declares no \"part\""},
      {plan_text(R"(, "parts": 2)", R"(, "part": 1)", "all_gather", good_region),
       "tasks[0].payload[0].reduce", "only all_reduce and reduce_scatter"},
      {plan_text(R"(, "parts": 2)", R"(, "part": 1)", "all_reduce",
                 R"({"tensor": "G", "box": [[0, 8], [0, 4]], "src_buffer": "s0", "dst_buffer": "p1"})"),
       "tasks[0].payload[1].dst_buffer", "part buffers are inputs"},
      // A copy of one contribution would never verify: the tensor's value is the sum.
      {plan_text(R"(, "parts": 2)", R"(, "part": 1)", "all_reduce",
                 R"({"tensor": "G", "box": [[0, 8], [0, 4]], "src_buffer": "p1", "dst_buffer": "s0"})"),
       "tasks[0].payload[1].src_buffer", "only a sum (\"reduce\": \"sum\") reads it"},
      {plan_text(R"(, "parts": 2)", R"(, "part": 1)", "all_reduce",
                 R"({"tensor": "G", "box": [[0, 8], [0, 4]], "src_buffer": "p1", "dst_buffer": "s0",
                     "reduce": "max"})"),
       "tasks[0].payload[1].reduce", "unknown reduction \"max\""},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const ConfigError e = plan_error(c.text);
    CHECK(e.json_path() == c.path);
    CHECK_THAT(e.message(), Contains(c.fragment));
  }
}

TEST_CASE("broadcast and collective payloads stay on their task's devices and inside its size",
          "[plan][bad-input]") {
  // T is 16 f32 = 64 B. Buffers a0, b0, c0 sit on devices a, b, c; b0 holds two copies.
  auto plan_text = [](const std::string& task) {
    return R"({"format": "meshsim.plan/1",
      "tensors": [{"name": "T", "shape": [16], "dtype": "f32"}],
      "buffers": [{"name": "a0", "device": "a", "size": "64B"}, {"name": "b0", "device": "b", "size": "128B"},
                  {"name": "c0", "device": "c", "size": "64B"}],
      "tasks": [)" +
           task + "]}";
  };
  auto region = [](const std::string& src, const std::string& dst, const std::string& dst_offset = "0B") {
    return R"({"tensor": "T", "box": [[0, 16]], "src_buffer": ")" + src + R"(", "dst_buffer": ")" + dst +
           R"(", "dst_offset": ")" + dst_offset + R"("})";
  };
  auto broadcast = [](const std::string& payload) {
    return R"({"id": "bc", "kind": "broadcast", "root": "a", "receivers": ["b"], "size": "64B", "payload": [)" +
           payload + "]}";
  };
  auto gather = [](const std::string& payload) {
    return R"({"id": "ag", "kind": "collective", "op": "all_gather", "group": ["a", "b"], "size": "64B",
               "payload": [)" +
           payload + "]}";
  };
  // What is allowed: the root sends to its receiver; a member writes the whole size.
  CHECK(parse(plan_text(broadcast(region("a0", "b0")))).tasks[0].payload.size() == 1);
  CHECK(parse(plan_text(gather(region("a0", "b0")))).tasks[0].payload.size() == 1);

  struct Case {
    std::string text, path, fragment;
  };
  const std::vector<Case> cases{
      // A broadcast writing on a device that is not one of its receivers.
      {plan_text(broadcast(region("a0", "c0"))), "tasks[0].payload[0].dst_buffer",
       "is on c, which is not one of the task's receivers"},
      // ... or reading anywhere but on its root.
      {plan_text(broadcast(region("b0", "b0", "64B"))), "tasks[0].payload[0].src_buffer",
       "is on b, not on a (the root)"},
      // A collective writing outside its group.
      {plan_text(gather(region("a0", "c0"))), "tasks[0].payload[0].dst_buffer",
       "is on c, which is not one of the task's group's members"},
      // Two full copies into one member: 128 B where the task moves 64 B.
      {plan_text(gather(region("a0", "b0") + "," + region("a0", "b0", "64B"))), "tasks[0].payload[1]",
       "the regions written on b add up to 128B, more than the task's size 64B"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const ConfigError e = plan_error(c.text);
    CHECK(e.json_path() == c.path);
    CHECK_THAT(e.message(), Contains(c.fragment));
  }
}

TEST_CASE("a plan whose tasks race on a buffer is refused", "[plan][bad-input]") {
  // "in" sends a0 to b0; "out" forwards b0 to c0. T is 16 f32 = 64 B.
  // Unless "out" waits for "in" (a dep, or the same stream on b), it may
  // read b0 before the bytes arrive.
  auto plan_text = [](const std::string& out_extra) {
    return R"({"format": "meshsim.plan/1",
      "tensors": [{"name": "T", "shape": [16], "dtype": "f32"}],
      "buffers": [{"name": "a0", "device": "a", "size": "64B"}, {"name": "b0", "device": "b", "size": "64B"},
                  {"name": "c0", "device": "c", "size": "64B"}],
      "tasks": [
        {"id": "in", "kind": "send", "src": "a", "dst": "b", "size": "64B",
         "payload": [{"tensor": "T", "box": [[0, 16]], "src_buffer": "a0", "dst_buffer": "b0"}]},
        {"id": "out", "kind": "send", "src": "b", "dst": "c", "size": "64B")" +
           out_extra + R"(,
         "payload": [{"tensor": "T", "box": [[0, 16]], "src_buffer": "b0", "dst_buffer": "c0"}]}]})";
  };
  // Ordered: by a dep, or by sharing stream 0 on b.
  CHECK_NOTHROW(parse(plan_text(R"(, "deps": ["in"], "stream": 1)")));
  CHECK_NOTHROW(parse(plan_text("")));
  // Not ordered: "out" runs on stream 1 with no dep.
  const ConfigError e = plan_error(plan_text(R"(, "stream": 1)"));
  CHECK(e.json_path() == "tasks[1]");
  CHECK_THAT(e.message(),
             Contains("task \"out\" reads bytes [0B, 64B) of buffer \"b0\" on b, which task \"in\" "
                      "writes, and neither waits for the other"));
}

TEST_CASE("a plan whose tasks race on a tile buffer is refused", "[plan][bad-input]") {
  // Two sends write halves of T into b's tile buffer: disjoint halves are
  // fine on any streams; the same rows from two unordered tasks race.
  auto plan_text = [](const std::string& second_rows) {
    return R"({"format": "meshsim.plan/1",
      "tensors": [{"name": "T", "shape": [4, 4], "dtype": "f32"}],
      "buffers": [{"name": "a0", "device": "a", "size": "64B"}, {"name": "c0", "device": "c", "size": "64B"},
                  {"name": "bt", "device": "b", "size": "64B", "tensor": "T", "box": [[0, 4], [0, 4]]}],
      "tasks": [
        {"id": "x", "kind": "send", "src": "a", "dst": "b", "size": "32B",
         "payload": [{"tensor": "T", "box": [[0, 2], [0, 4]], "src_buffer": "a0", "dst_buffer": "bt"}]},
        {"id": "y", "kind": "send", "src": "c", "dst": "b", "size": "32B", "stream": 1,
         "payload": [{"tensor": "T", "box": [)" +
           second_rows + R"(, [0, 4]], "src_buffer": "c0", "dst_buffer": "bt"}]}]})";
  };
  CHECK_NOTHROW(parse(plan_text("[2, 4]")));
  const ConfigError e = plan_error(plan_text("[1, 3]"));
  CHECK_THAT(e.message(),
             Contains("task \"y\" writes the box [1, 2) x [0, 4) of buffer \"bt\" on b, which task "
                      "\"x\" writes"));
}

TEST_CASE("dtypes read under their datasheet, NumPy and PyTorch names too", "[plan]") {
  // fp32, fp16, fp64 are the names GPU datasheets use; float32 ... uint8
  // NumPy's; half, float, double, int, byte PyTorch's.
  for (const auto& [alias, dtype] : {std::pair{"fp32", DType::f32},
                                     {"fp16", DType::f16},
                                     {"fp64", DType::f64},
                                     {"bf16", DType::bf16},
                                     {"float32", DType::f32},
                                     {"float16", DType::f16},
                                     {"bfloat16", DType::bf16},
                                     {"float64", DType::f64},
                                     {"int32", DType::i32},
                                     {"int8", DType::i8},
                                     {"uint8", DType::u8},
                                     {"half", DType::f16},
                                     {"float", DType::f32},
                                     {"double", DType::f64},
                                     {"int", DType::i32},
                                     {"byte", DType::u8}}) {
    const Json j = Json::parse(std::string(R"({"dtype": ")") + alias + "\"}");
    CHECK(dtype_from_json(JsonCursor(j, "d.json")["dtype"]) == dtype);
  }
  // The name written back is the canonical one.
  CHECK(to_string(DType::f16) == "f16");
}

TEST_CASE("the race check meets each access with the last write and the reads since", "[plan][bad-input]") {
  // T is 16 f32 = 64 B, sent from a0 into b's flat buffer b0 by w1 and w2,
  // and read out of b0 into c0 by r. Tasks run on their own streams (1, 2,
  // 3 on b), so only deps order them.
  auto plan_text = [](const std::string& w2_deps, const std::string& r_deps, const std::string& w2_box,
                      const std::string& w2_at = "0B", const std::string& w2_size = "64B") {
    return R"({"format": "meshsim.plan/1",
      "tensors": [{"name": "T", "shape": [16], "dtype": "f32"}],
      "buffers": [{"name": "a0", "device": "a", "size": "64B"}, {"name": "b0", "device": "b", "size": "64B"},
                  {"name": "c0", "device": "c", "size": "64B"}],
      "tasks": [
        {"id": "w1", "kind": "send", "src": "a", "dst": "b", "size": "64B", "stream": 1,
         "payload": [{"tensor": "T", "box": [[0, 16]], "src_buffer": "a0", "dst_buffer": "b0"}]},
        {"id": "w2", "kind": "send", "src": "a", "dst": "b", "size": ")" +
           w2_size + R"(", "stream": 2, "deps": [)" + w2_deps + R"(],
         "payload": [{"tensor": "T", "box": [)" +
           w2_box + R"(], "src_buffer": "a0", "dst_buffer": "b0", "dst_offset": ")" + w2_at + R"("}]},
        {"id": "r", "kind": "send", "src": "b", "dst": "c", "size": "64B", "stream": 3, "deps": [)" +
           r_deps + R"(],
         "payload": [{"tensor": "T", "box": [[0, 16]], "src_buffer": "b0", "dst_buffer": "c0"}]}]})";
  };
  // w1 -> w2 -> r: every conflict ordered, r by way of w2.
  CHECK_NOTHROW(parse(plan_text(R"("w1")", R"("w2")", "[0, 16]")));
  // r waits for w1 only: w2 overwrites what r may be reading.
  ConfigError e = plan_error(plan_text(R"("w1")", R"("w1")", "[0, 16]"));
  CHECK_THAT(e.message(), Contains("buffer \"b0\" on b, which task"));
  CHECK_THAT(e.message(), Contains("neither waits for the other"));
  // w2 writes the last 12 elements (bytes [16, 64)) with no dep on w1:
  // their writes race on bytes [16B, 64B).
  e = plan_error(plan_text("", R"("w1", "w2")", "[4, 16]", "16B", "48B"));
  CHECK_THAT(e.message(),
             Contains("task \"w2\" writes bytes [16B, 64B) of buffer \"b0\" on b, which task \"w1\" "
                      "writes, and neither waits for the other"));
}

TEST_CASE("a task whose regions write the same bytes is refused unless they sum", "[plan][bad-input]") {
  // One send writes T's first half twice into b0 (bytes [0, 32) from two
  // regions): which copy survives is not defined.
  const std::string text = R"({"format": "meshsim.plan/1",
      "tensors": [{"name": "T", "shape": [16], "dtype": "f32"}],
      "buffers": [{"name": "a0", "device": "a", "size": "64B"}, {"name": "b0", "device": "b", "size": "64B"}],
      "tasks": [
        {"id": "twice", "kind": "send", "src": "a", "dst": "b", "size": "64B",
         "payload": [{"tensor": "T", "box": [[0, 8]], "src_buffer": "a0", "dst_buffer": "b0"},
                     {"tensor": "T", "box": [[0, 8]], "src_buffer": "a0", "src_offset": "32B",
                      "dst_buffer": "b0", "dst_offset": "0B"}]}]})";
  const ConfigError e = plan_error(text);
  CHECK(e.json_path() == "tasks[0]");
  CHECK_THAT(e.message(), Contains("task \"twice\" writes bytes [0B, 32B) of buffer \"b0\" on b from two of "
                                   "its regions"));
}
