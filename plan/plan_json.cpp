#include "plan/plan_json.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/unit_strings.h"
#include "plan/json_fields.h"
#include "plan/kernels.h"
#include "plan/races.h"
#include "plan/schedule.h"

namespace meshsim::plan {

namespace {

// Plan files spell each value by its name (named, json_fields.h), not an
// alias ("all_reduce", not the CLI's "allreduce").
// "auto" (the table selects) or one of `names`.
template <typename E, std::size_t N>
std::optional<E> auto_or(const JsonCursor& c, const EnumNames<E, N>& names) {
  if (c.json().is_string() && c.as_string() == "auto") return std::nullopt;
  return named(c, names);
}

}  // namespace

namespace {

struct Context {
  std::unordered_map<std::string, std::size_t> tensors;
  std::unordered_map<std::string, std::size_t> buffers;
  std::unordered_map<std::string, std::size_t> devices;
  std::unordered_map<std::string, std::size_t> kernel_sets;
  Plan* plan = nullptr;

  // The index of the kernel set named at `c`.
  std::size_t kernel_set(const JsonCursor& c) const {
    const std::string name = c.as_name();
    const auto it = kernel_sets.find(name);
    if (it == kernel_sets.end())
      c.fail(fmt::format("unknown kernel set \"{}\": the plan's \"kernel_sets\" name no such set", name));
    return it->second;
  }

  // The index of the device named at `c`, added to the plan's table when new.
  std::size_t device(const JsonCursor& c) {
    std::string name = c.as_name();
    const auto [it, added] = devices.try_emplace(name, plan->devices.size());
    if (added) plan->devices.push_back(std::move(name));
    return it->second;
  }
};

std::vector<std::size_t> device_list(const JsonCursor& c, std::size_t min, Context& ctx) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::size_t d = ctx.device(c.at(i));
    if (std::find(out.begin(), out.end(), d) != out.end())
      c.at(i).fail(fmt::format("device \"{}\" appears twice", ctx.plan->devices[d]));
    out.push_back(d);
  }
  if (out.size() < min) c.fail(fmt::format("needs at least {} devices, got {}", min, out.size()));
  return out;
}

// [[begin, end], ...] inside `tensor`; errors name the dimension.
Box box_from_json(const JsonCursor& box, const Tensor& tensor) {
  if (box.size() != tensor.shape.size())
    box.fail(fmt::format("tensor \"{}\" has {} dimensions, the box has {}", tensor.name, tensor.shape.size(),
                         box.size()));
  Box out;
  for (std::size_t d = 0; d < box.size(); ++d) {
    const JsonCursor dim = box.at(d);
    if (dim.size() != 2) dim.fail("a box dimension is [begin, end]");
    const std::int64_t b = dim.at(0).as_int();
    const std::int64_t e = dim.at(1).as_int();
    if (b < 0 || e <= b || e > tensor.shape[d])
      dim.fail(fmt::format("[{}, {}] is not a non-empty range inside dimension {} of \"{}\" (size {})", b, e,
                           d, tensor.name, tensor.shape[d]));
    out.emplace_back(b, e);
  }
  return out;
}

Region region_from_json(const JsonCursor& c, const Context& ctx, const Task& task) {
  c.allow_only({"tensor", "box", "src_buffer", "src_offset", "dst_buffer", "dst_offset", "reduce"});
  const Plan& plan = *ctx.plan;
  Region r;
  const JsonCursor tc = c["tensor"];
  const std::string tensor_name = tc.as_name();
  const auto ti = ctx.tensors.find(tensor_name);
  if (ti == ctx.tensors.end()) tc.fail(fmt::format("unknown tensor \"{}\"", tensor_name));
  r.tensor = ti->second;
  const Tensor& tensor = plan.tensors[r.tensor];
  r.box = box_from_json(c["box"], tensor);
  const Bytes bytes = box_bytes(tensor, r.box);
  // Buffers: must exist, sit on the right device, and hold the region.
  // `on`: the devices the buffer may sit on; `who` names them in a message,
  // as one device ("the root") or as a set ("receivers").
  auto buffer = [&](const char* key, const char* offset_key, std::span<const std::size_t> on, const char* who,
                    bool one, std::size_t& index, Bytes& offset) {
    const JsonCursor bc = c[key];
    const std::string name = bc.as_name();
    const auto bi = ctx.buffers.find(name);
    if (bi == ctx.buffers.end()) bc.fail(fmt::format("unknown buffer \"{}\"", name));
    index = bi->second;
    const Buffer& buf = plan.buffers[index];
    if (std::find(on.begin(), on.end(), buf.device) == on.end())
      bc.fail(one ? fmt::format("buffer \"{}\" is on {}, not on {} ({})", name, plan.devices[buf.device],
                                plan.devices[on[0]], who)
                  : fmt::format("buffer \"{}\" is on {}, which is not one of the task's {}", name,
                                plan.devices[buf.device], who));
    if (auto oc = c.find(offset_key)) {
      offset = oc->as_bytes();
      if (offset.count() < 0) oc->fail("offset must not be negative");
    }
    if (!buf.box.empty()) {
      // The buffer holds a tile: the region sits at its place in the tile.
      if (buf.tensor != r.tensor)
        bc.fail(fmt::format("buffer \"{}\" holds tensor \"{}\", not \"{}\"", name,
                            plan.tensors[*buf.tensor].name, tensor.name));
      if (offset.count() != 0) c[offset_key].fail("a buffer that declares a box takes no offset");
      for (std::size_t d = 0; d < r.box.size(); ++d)
        if (r.box[d].first < buf.box[d].first || r.box[d].second > buf.box[d].second)
          bc.fail(fmt::format("the region's dimension {} [{}, {}] lies outside buffer \"{}\" ([{}, {}])", d,
                              r.box[d].first, r.box[d].second, name, buf.box[d].first, buf.box[d].second));
      return;
    }
    if (offset > buf.size || bytes > buf.size - offset)  // (offset + bytes could overflow)
      bc.fail(fmt::format("the region ({}) at offset {} does not fit in buffer \"{}\" ({})",
                          exact_string(bytes), exact_string(offset), name, exact_string(buf.size)));
  };
  // A send reads on its source and writes on its destination; a broadcast
  // reads on its root and writes on its receivers; a collective reads and
  // writes on its group's members.
  const std::span<const std::size_t> all(task.devices);
  switch (task.kind) {
    case TaskKind::send:
      buffer("src_buffer", "src_offset", all.first(1), "the source", true, r.src_buffer, r.src_offset);
      buffer("dst_buffer", "dst_offset", all.subspan(1, 1), "the destination", true, r.dst_buffer,
             r.dst_offset);
      break;
    case TaskKind::broadcast:
      buffer("src_buffer", "src_offset", all.first(1), "the root", true, r.src_buffer, r.src_offset);
      buffer("dst_buffer", "dst_offset", all.subspan(1), "receivers", false, r.dst_buffer, r.dst_offset);
      break;
    default:
      buffer("src_buffer", "src_offset", all, "group's members", false, r.src_buffer, r.src_offset);
      buffer("dst_buffer", "dst_offset", all, "group's members", false, r.dst_buffer, r.dst_offset);
      break;
  }
  if (auto rc = c.find("reduce")) {
    if (rc->as_string() != "sum")
      rc->fail(fmt::format("unknown reduction \"{}\" (expected sum)", rc->as_string()));
    if (task.kind != TaskKind::collective ||
        (task.op != CollectiveOp::all_reduce && task.op != CollectiveOp::reduce_scatter))
      rc->fail("only all_reduce and reduce_scatter payloads reduce");
    const Buffer& src = plan.buffers[r.src_buffer];
    if (src.part < 0)
      c["src_buffer"].fail(fmt::format(
          "a sum adds contributions: buffer \"{}\" declares no \"part\" of \"{}\"", src.name, tensor.name));
    r.reduce = true;
  }
  if (const Buffer& src = plan.buffers[r.src_buffer]; !r.reduce && src.part >= 0)
    c["src_buffer"].fail(fmt::format(
        "buffer \"{}\" holds part {} of \"{}\", one of its {} contributions: only a sum (\"reduce\": "
        "\"sum\") reads it, as a copy would move one contribution where the tensor is their sum",
        src.name, src.part, plan.tensors[*src.tensor].name, plan.tensors[*src.tensor].parts));
  const Buffer& dst = plan.buffers[r.dst_buffer];
  if (dst.part >= 0)
    c["dst_buffer"].fail(
        fmt::format("buffer \"{}\" holds part {} of \"{}\": part buffers are inputs, which no region writes",
                    dst.name, dst.part, plan.tensors[*dst.tensor].name));
  return r;
}

// The regions of task t at `p`, checked against its kind and size.
void read_payload(const JsonCursor& p, const Context& ctx, Task& t) {
  Bytes total;
  for (std::size_t i = 0; i < p.size(); ++i) {
    t.payload.push_back(region_from_json(p.at(i), ctx, t));
    const auto sum = checked_add(total.count(), region_bytes(*ctx.plan, t.payload.back()).count());
    if (!sum) p.at(i).fail("the task's regions add up to more than the 8 EiB that meshsim counts");
    total = Bytes(*sum);
  }
  // A send moves its regions; a broadcast delivers `size` to each receiver,
  // one region per receiver; a collective's regions are its own account.
  const std::int64_t copies =
      t.kind == TaskKind::broadcast ? static_cast<std::int64_t>(t.devices.size()) - 1 : 1;
  if (t.kind == TaskKind::collective) {
    // Whatever the op, no member ends up with more than the task's size.
    // Regions that sum into one place (the parts of an all-reduce) fill it once.
    std::map<std::size_t, Bytes> written;
    std::set<std::tuple<std::size_t, Bytes, Box>> summed;
    for (std::size_t i = 0; i < t.payload.size(); ++i) {
      const Region& r = t.payload[i];
      if (r.reduce && !summed.emplace(r.dst_buffer, r.dst_offset, r.box).second) continue;
      const std::size_t dev = ctx.plan->buffers[r.dst_buffer].device;
      Bytes& w = written[dev];
      w = Bytes(saturating_add(w.count(), region_bytes(*ctx.plan, r).count()));
      if (w > t.size)
        p.at(i).fail(fmt::format("the regions written on {} add up to {}, more than the task's size {}",
                                 ctx.plan->devices[dev], exact_string(w), exact_string(t.size)));
    }
  }
  if (t.kind != TaskKind::collective && total != t.size * copies)
    p.fail(t.kind == TaskKind::broadcast
               ? fmt::format("the regions add up to {}, but {} receivers of {} each get {}",
                             exact_string(total), copies, exact_string(t.size), exact_string(t.size * copies))
               : fmt::format("the regions add up to {}, but the task moves {}", exact_string(total),
                             exact_string(t.size)));
}

// A compute task with a kernel set is timed by the set's kernels, and the
// GPU backends run work of its FLOPs: "flops" and "bytes", when given
// beside "kernels", must be the set's own totals (as written plans carry
// them), so the two cannot disagree.
void check_kernel_totals(const JsonCursor& c, const KernelSet& set, const Task& t) {
  const double flops = set.kernels.flops();
  if (auto f = c.find("flops"); f && std::abs(t.flops - flops) > 1e-9 * std::max(1.0, flops))
    f->fail(
        fmt::format("flops {:g} disagrees with kernel set \"{}\", whose kernels do {:g}: leave it out, "
                    "the set's total is used",
                    t.flops, set.name, flops));
  if (auto b = c.find("bytes"); b && t.mem_bytes != set.kernels.bytes())
    b->fail(
        fmt::format("bytes {} disagrees with kernel set \"{}\", whose kernels move {}: leave it out, "
                    "the set's total is used",
                    exact_string(t.mem_bytes), set.name, exact_string(set.kernels.bytes())));
}

Task task_from_json(const JsonCursor& c, Context& ctx) {
  Task t;
  const JsonCursor kind = c["kind"];
  t.kind = named(kind, kTaskKindNames);
  switch (t.kind) {
    case TaskKind::compute:
      c.allow_only({"id", "kind", "device", "devices", "stream", "deps", "duration", "flops", "bytes",
                    "dtype", "kernels"});
      if (c.has("device") == c.has("devices"))
        c.fail("a compute task needs \"device\" (one GPU) or \"devices\" (several, in lockstep), not both");
      t.devices = c.has("device") ? std::vector<std::size_t>{ctx.device(c["device"])}
                                  : device_list(c["devices"], 1, ctx);
      if (auto k = c.find("kernels")) t.kernels = ctx.kernel_set(*k);
      if (auto d = c.find("duration")) {
        t.duration = d->as_time();
        if (*t.duration < Time::zero()) d->fail("duration must not be negative");
        for (const char* k : {"flops", "bytes", "kernels"})
          if (c.has(k)) c[k].fail("give either \"duration\" or \"flops\"/\"bytes\"/\"kernels\", not both");
      } else {
        if (!c.has("flops") && !c.has("bytes") && !t.kernels)
          c.fail("a compute task needs \"duration\", or \"flops\" and/or \"bytes\", or \"kernels\"");
        if (t.kernels) {  // the set's totals unless given
          t.flops = ctx.plan->kernel_sets[*t.kernels].kernels.flops();
          t.mem_bytes = ctx.plan->kernel_sets[*t.kernels].kernels.bytes();
        }
        if (auto f = c.find("flops")) {
          t.flops = f->as_number();
          if (!(t.flops >= 0) || t.flops > 1e30) f->fail("flops must be between 0 and 1e30");
        }
        if (auto b = c.find("bytes")) t.mem_bytes = b->as_bytes();
        if (t.mem_bytes.count() < 0) c["bytes"].fail("bytes must not be negative");
        if (t.kernels) check_kernel_totals(c, ctx.plan->kernel_sets[*t.kernels], t);
      }
      if (auto d = c.find("dtype")) t.dtype = dtype_from_json(*d);
      break;
    case TaskKind::send:
      c.allow_only({"id", "kind", "src", "dst", "size", "stream", "deps", "payload"});
      t.devices = {ctx.device(c["src"]), ctx.device(c["dst"])};
      t.size = positive_size(c["size"]);
      break;
    case TaskKind::broadcast: {
      c.allow_only({"id", "kind", "root", "receivers", "size", "chunk", "stream", "deps", "payload"});
      t.devices = {ctx.device(c["root"])};
      const JsonCursor rc = c["receivers"];
      for (std::size_t d : device_list(rc, 1, ctx)) {
        if (d == t.devices[0])
          rc.fail(fmt::format("the root \"{}\" is also a receiver", ctx.plan->devices[d]));
        t.devices.push_back(d);
      }
      t.size = positive_size(c["size"]);
      if (auto ch = c.find("chunk")) t.chunk = positive_size(*ch);
      break;
    }
    case TaskKind::collective:
      c.allow_only({"id", "kind", "op", "group", "size", "algorithm", "protocol", "channels", "ring_order",
                    "dtype", "stream", "deps", "payload"});
      t.op = named(c["op"], plan::kOpNames);
      t.devices = device_list(c["group"], 2, ctx);
      t.size = positive_size(c["size"]);
      if (auto a = c.find("algorithm")) t.algorithm = auto_or(*a, plan::kAlgorithmNames);
      if (auto pr = c.find("protocol")) t.protocol = auto_or(*pr, plan::kProtocolNames);
      if (auto ch = c.find("channels")) t.channels = static_cast<int>(ch->as_int_in(0, 64));
      if (auto d = c.find("dtype")) t.dtype = dtype_from_json(*d);
      if (auto o = c.find("ring_order")) {
        const std::string v = o->as_string();
        if (v != "topology" && v != "listed")
          o->fail(fmt::format("unknown ring_order \"{}\" (expected topology or listed)", v));
        t.listed_order = v == "listed";
      }
      if (t.algorithm && !plan::supports(*t.algorithm, t.op))
        c["algorithm"].fail(
            fmt::format("algorithm {} cannot run {}", plan::to_string(*t.algorithm), plan::to_string(t.op)));
      if (t.algorithm && t.protocol && !plan::supports(*t.algorithm, *t.protocol))
        c["protocol"].fail(
            fmt::format("algorithm {} runs only the simple protocol", plan::to_string(*t.algorithm)));
      break;
  }
  if (auto s = c.find("stream")) t.stream = static_cast<int>(s->as_int_in(0, 1023));
  if (auto p = c.find("payload")) read_payload(*p, ctx, t);
  return t;
}

}  // namespace

namespace {

// The plan at `j` and its schedule (which checks deps and stream order together: no cycle).
// One entry of "tensors".
Tensor tensor_from_json(const JsonCursor& c, const Context& ctx) {
  c.allow_only({"name", "shape", "dtype", "parts"});
  Tensor t;
  t.name = c["name"].as_name();
  if (ctx.tensors.contains(t.name)) c["name"].fail(fmt::format("duplicate tensor name \"{}\"", t.name));
  t.shape = shape_from_json(c["shape"]);
  if (auto d = c.find("dtype")) t.dtype = dtype_from_json(*d);
  if (auto n = c.find("parts")) t.parts = static_cast<int>(n->as_int_in(1, kMaxParts));
  return t;
}

// One entry of "buffers": a device's memory, and which box of which tensor
// (or which part of a sum) it holds, if any.
Buffer buffer_from_json(const JsonCursor& c, Context& ctx, const Plan& p) {
  c.allow_only({"name", "device", "size", "tensor", "box", "part"});
  Buffer b{c["name"].as_name(), ctx.device(c["device"]), positive_size(c["size"]), {}, {}};
  if (c.has("tensor") != c.has("box")) c.fail("give both \"tensor\" and \"box\", or neither");
  if (auto tc = c.find("tensor")) {
    const std::string tensor_name = tc->as_name();
    const auto ti = ctx.tensors.find(tensor_name);
    if (ti == ctx.tensors.end()) tc->fail(fmt::format("unknown tensor \"{}\"", tensor_name));
    b.tensor = ti->second;
    const Tensor& tensor = p.tensors[ti->second];
    b.box = box_from_json(c["box"], tensor);
    const Bytes need = box_bytes(tensor, b.box);
    if (b.size < need)
      c["size"].fail(
          fmt::format("{} is smaller than its box ({})", exact_string(b.size), exact_string(need)));
    if (auto pc = c.find("part")) {
      if (tensor.parts < 2)
        pc->fail(fmt::format("tensor \"{}\" is not a sum of parts (give it \"parts\")", tensor.name));
      b.part = static_cast<int>(pc->as_int_in(0, tensor.parts - 1));
    }
  } else if (c.has("part")) {
    c["part"].fail("a buffer holds a part of the tensor whose box it declares: give \"tensor\" and \"box\"");
  }
  if (ctx.buffers.contains(b.name)) c["name"].fail(fmt::format("duplicate buffer name \"{}\"", b.name));
  return b;
}

// The "tasks", then their dependencies, which may point forward: resolved
// once every id is known.
void read_tasks(const JsonCursor& tasks, Context& ctx, Plan& p) {
  std::unordered_map<std::string, std::size_t> ids;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const JsonCursor c = tasks.at(i);
    if (!c.is_object()) c.fail(fmt::format("a task is an object, got {}", json_type_name(c.json())));
    const std::string id = c["id"].as_name();
    if (ids.contains(id)) c["id"].fail(fmt::format("duplicate task id \"{}\"", id));
    ids.emplace(id, i);
    Task t = task_from_json(c, ctx);
    t.id = id;
    p.tasks.push_back(std::move(t));
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto deps = tasks.at(i).find("deps");
    if (!deps) continue;
    for (std::size_t k = 0; k < deps->size(); ++k) {
      const JsonCursor d = deps->at(k);
      const std::string dep = d.as_string();
      const auto it = ids.find(dep);
      if (it == ids.end()) d.fail(fmt::format("unknown task \"{}\"", dep));
      if (it->second == i) d.fail("a task cannot depend on itself");
      p.tasks[i].deps.push_back(it->second);
    }
  }
}

}  // namespace

LoadedPlan read_plan(const Json& j, const std::string& file) {
  const JsonCursor root(j, file);
  if (!j.is_object()) root.fail(fmt::format("a plan is a JSON object, got {}", json_type_name(j)));
  // The format first: a topology passed as a plan should say so, not
  // complain about its keys.
  const JsonCursor f = root["format"];
  if (f.as_string() != kPlanFormat)
    f.fail(fmt::format("unsupported format \"{}\" (this meshsim reads \"{}\")", f.as_string(), kPlanFormat));
  root.allow_only({"format", "name", "tensors", "buffers", "kernel_sets", "tasks"});
  Plan p;
  Context ctx;
  ctx.plan = &p;
  if (auto n = root.find("name")) p.name = n->as_string();
  if (auto ks = root.find("kernel_sets")) p.kernel_sets = kernel_sets_from_json(*ks);
  for (std::size_t i = 0; i < p.kernel_sets.size(); ++i) ctx.kernel_sets.emplace(p.kernel_sets[i].name, i);
  if (auto ts = root.find("tensors"))
    for (std::size_t i = 0; i < ts->size(); ++i) {
      Tensor t = tensor_from_json(ts->at(i), ctx);
      ctx.tensors.emplace(t.name, p.tensors.size());
      p.tensors.push_back(std::move(t));
    }
  if (auto bs = root.find("buffers"))
    for (std::size_t i = 0; i < bs->size(); ++i) {
      Buffer b = buffer_from_json(bs->at(i), ctx, p);
      ctx.buffers.emplace(b.name, p.buffers.size());
      p.buffers.push_back(std::move(b));
    }
  read_tasks(root["tasks"], ctx, p);
  Schedule schedule = make_schedule(p, file);
  check_races(p, schedule, file);
  return {std::move(p), std::move(schedule)};
}

Plan plan_from_json(const Json& j, const std::string& file) {
  return read_plan(j, file).plan;
}

LoadedPlan load_plan(const std::string& file) {
  return read_plan(read_json_file(file), file);
}

Plan load_plan_file(const std::string& file) {
  return plan_from_json(read_json_file(file), file);
}

}  // namespace meshsim::plan
