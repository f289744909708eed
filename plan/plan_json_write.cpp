#include <ostream>

#include <fmt/format.h>

#include "core/json.h"
#include "core/json_writer.h"
#include "core/unit_strings.h"
#include "plan/kernels.h"
#include "plan/plan_json.h"

// Writing meshsim.plan/1: the inverse of the loader in plan_json.cpp.

namespace meshsim::plan {

namespace {

Json box_to_json(const Box& box) {
  Json out = Json::array();
  for (const auto& [b, e] : box) out.push_back(Json::array({b, e}));
  return out;
}

Json region_to_json(const Plan& p, const Region& r) {
  Json j{{"tensor", p.tensors[r.tensor].name},         {"box", box_to_json(r.box)},
         {"src_buffer", p.buffers[r.src_buffer].name}, {"src_offset", exact_string(r.src_offset)},
         {"dst_buffer", p.buffers[r.dst_buffer].name}, {"dst_offset", exact_string(r.dst_offset)}};
  if (r.reduce) j["reduce"] = "sum";
  return j;
}

Json plan_to_json_without_tasks(const Plan& p) {
  Json j;
  j["format"] = kPlanFormat;
  j["name"] = p.name;
  Json tensors = Json::array();
  for (const Tensor& t : p.tensors) {
    Json o{{"name", t.name}, {"shape", t.shape}, {"dtype", std::string(to_string(t.dtype))}};
    if (t.parts > 1) o["parts"] = t.parts;
    tensors.push_back(std::move(o));
  }
  j["tensors"] = std::move(tensors);
  Json buffers = Json::array();
  for (const Buffer& b : p.buffers) {
    Json o{{"name", b.name}, {"device", p.devices[b.device]}, {"size", exact_string(b.size)}};
    if (b.tensor) {
      o["tensor"] = p.tensors[*b.tensor].name;
      o["box"] = box_to_json(b.box);
      if (b.part >= 0) o["part"] = b.part;
    }
    buffers.push_back(std::move(o));
  }
  j["buffers"] = std::move(buffers);
  if (!p.kernel_sets.empty()) j["kernel_sets"] = kernel_sets_to_json(p.kernel_sets);
  return j;
}

Json task_to_json(const Plan& p, const Task& t) {
  const auto name = [&](std::size_t d) { return p.devices[d]; };
  const auto names = [&](auto first, auto last) {
    std::vector<std::string> out;
    for (auto it = first; it != last; ++it) out.push_back(p.devices[*it]);
    return out;
  };
  Json o;
  o["id"] = t.id;
  o["kind"] = std::string(to_string(t.kind));
  switch (t.kind) {
    case TaskKind::compute:
      if (t.devices.size() == 1)
        o["device"] = name(t.devices[0]);
      else
        o["devices"] = names(t.devices.begin(), t.devices.end());
      if (t.duration) {
        o["duration"] = exact_string(*t.duration);
      } else {
        o["flops"] = t.flops;
        o["bytes"] = exact_string(t.mem_bytes);
      }
      if (t.kernels) o["kernels"] = p.kernel_sets[*t.kernels].name;
      o["dtype"] = std::string(to_string(t.dtype));
      break;
    case TaskKind::send:
      o["src"] = name(t.devices[0]);
      o["dst"] = name(t.devices[1]);
      o["size"] = exact_string(t.size);
      break;
    case TaskKind::broadcast:
      o["root"] = name(t.devices[0]);
      o["receivers"] = names(t.devices.begin() + 1, t.devices.end());
      o["size"] = exact_string(t.size);
      o["chunk"] = exact_string(t.chunk);
      break;
    case TaskKind::collective:
      o["op"] = std::string(to_string(t.op));
      o["group"] = names(t.devices.begin(), t.devices.end());
      o["size"] = exact_string(t.size);
      o["algorithm"] = t.algorithm ? std::string(to_string(*t.algorithm)) : "auto";
      o["protocol"] = t.protocol ? std::string(to_string(*t.protocol)) : "auto";
      o["channels"] = t.channels;
      if (t.listed_order) o["ring_order"] = "listed";
      o["dtype"] = std::string(to_string(t.dtype));
      break;
  }
  o["stream"] = t.stream;
  Json deps = Json::array();
  for (std::size_t d : t.deps) deps.push_back(p.tasks[d].id);
  o["deps"] = std::move(deps);
  if (!t.payload.empty()) {
    Json payload = Json::array();
    for (const Region& r : t.payload) payload.push_back(region_to_json(p, r));
    o["payload"] = std::move(payload);
  }
  return o;
}

}  // namespace

Json plan_to_json(const Plan& p) {
  Json j = plan_to_json_without_tasks(p);
  Json tasks = Json::array();
  for (const Task& t : p.tasks) tasks.push_back(task_to_json(p, t));
  j["tasks"] = std::move(tasks);
  return j;
}

void write_plan_json(const Plan& p, std::ostream& out) {
  Json rest = plan_to_json_without_tasks(p);
  rest["tasks"] = Json::array();
  JsonWriter w(out, rest);
  w.begin_array("tasks");
  for (const Task& t : p.tasks) w.add(task_to_json(p, t));
  w.end_array();
  w.finish();
}

}  // namespace meshsim::plan
