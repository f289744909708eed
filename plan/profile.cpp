#include "plan/profile.h"

#include <fmt/format.h>

#include "plan/json_fields.h"

namespace meshsim::plan {

namespace {

constexpr const char* kFormat = "meshsim.profile/1";

// {"value", "low", "high", "source"}, each number read by `read`.
template <typename T, typename Read>
Figure<T> figure(const JsonCursor& c, Read read) {
  c.allow_only({"value", "low", "high", "source"});
  Figure<T> f{read(c["value"]), read(c["low"]), read(c["high"]), c["source"].as_string()};
  if (f.source.empty()) c["source"].fail("every figure names where it comes from");
  if (f.low > f.value) c["low"].fail("the low end of the spread is above the value");
  if (f.high < f.value) c["high"].fail("the high end of the spread is below the value");
  return f;
}

}  // namespace

Profile profile_from_json(const Json& j, const std::string& file) {
  const JsonCursor root(j, file);
  root.require_format(kFormat);
  root.allow_only({"format", "name", "gpu_model", "status", "summary", "efficiency", "fp8_efficiency",
                   "attention_efficiency", "memory_bandwidth", "launch_overhead", "host_per_kernel",
                   "measured"});
  Profile p;
  p.name = root["name"].as_name();
  p.gpu_model = root["gpu_model"].as_name();
  p.status = named(root["status"], kProfileStatusNames);
  const JsonCursor eff = root["efficiency"];
  if (!eff.is_object()) eff.fail("expected an object keyed by fp32, fp16, fp64, int8");
  eff.allow_only({"fp32", "fp16", "fp64", "int8"});
  for (std::size_t k = 0; k < kDTypeClasses; ++k)
    if (auto e = eff.find(kDTypeClassNames.name(static_cast<DTypeClass>(k))))
      p.efficiency[k] = figure<double>(*e, fraction);
  if (!p.efficiency[static_cast<std::size_t>(DTypeClass::fp16)])
    eff.fail("a profile has at least the fp16 class (the tensor cores' GEMMs)");
  if (auto e = root.find("fp8_efficiency")) p.fp8_efficiency = figure<double>(*e, fraction);
  if (auto e = root.find("attention_efficiency")) p.attention_efficiency = figure<double>(*e, fraction);
  if (auto e = root.find("memory_bandwidth")) p.memory_bandwidth = figure<Bandwidth>(*e, positive_bandwidth);
  if (auto e = root.find("launch_overhead")) p.launch_overhead = figure<Time>(*e, non_negative_time);
  if (auto e = root.find("host_per_kernel")) p.host_per_kernel = figure<Time>(*e, non_negative_time);
  if (auto e = root.find("measured")) p.measured = e->as_name();
  return p;
}

Profile load_profile_file(const std::string& file) {
  return profile_from_json(read_json_file(file), file);
}

}  // namespace meshsim::plan
