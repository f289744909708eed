#include "sim/profiles.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "hardware/gpus.h"
#include "plan/profile.h"
#include "sim/calibrate_apply.h"
#include "topology/cluster.h"

using namespace meshsim;
using namespace meshsim::sim;

namespace {

const std::string kData = MESHSIM_SOURCE_DIR "/tests/data/profiles/";

topology::Topology cluster(const std::string& host, int hosts) {
  topology::ClusterSpec cs;
  cs.host_preset = host;
  cs.hosts = hosts;
  return topology::build_cluster(cs);
}

Json profile_json() {
  return Json::parse(R"({
    "format": "meshsim.profile/1", "name": "p", "gpu_model": "A100", "status": "published",
    "efficiency": {"fp16": {"value": 0.8, "low": 0.7, "high": 0.85, "source": "s"}}
  })");
}

// The message of the ConfigError that reading `j` throws; empty when none.
std::string refusal(const Json& j) {
  try {
    (void)plan::profile_from_json(j, "p.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a profile's figures must name their source and lie within their spread", "[profiles]") {
  CHECK(refusal(profile_json()).empty());
  Json j = profile_json();
  j["efficiency"]["fp16"]["source"] = "";
  CHECK_THAT(refusal(j), Catch::Contains("efficiency.fp16.source") && Catch::Contains("where it comes from"));
  j = profile_json();
  j["efficiency"]["fp16"]["low"] = 0.81;
  CHECK_THAT(refusal(j), Catch::Contains("efficiency.fp16.low"));
  j = profile_json();
  j["efficiency"]["fp16"]["high"] = 0.79;
  CHECK_THAT(refusal(j), Catch::Contains("efficiency.fp16.high"));
  j = profile_json();
  j["efficiency"]["fp16"]["value"] = 1.2;
  CHECK_THAT(refusal(j), Catch::Contains("(0, 1]"));
  j = profile_json();
  j["status"] = "guessed";
  CHECK_THAT(refusal(j), Catch::Contains("measured, published or estimate"));
  j = profile_json();
  j["efficiency"] = Json::parse(R"({"fp32": {"value": 0.8, "low": 0.7, "high": 0.85, "source": "s"}})");
  CHECK_THAT(refusal(j), Catch::Contains("at least the fp16 class"));
  j = profile_json();
  j["memory_bandwidth"] = Json::parse(R"({"value": "1TBps", "low": "0.9TBps", "high": "1.1TBps"})");
  CHECK_THAT(refusal(j), Catch::Contains("memory_bandwidth: missing required key \"source\""));
}

TEST_CASE("a profile's model takes its figures at the value or at either end of their spreads",
          "[profiles]") {
  const LoadedProfile p = load_profile(kData + "h100-test.json");
  REQUIRE(p.points.size() == 2);  // from the calibration it names, beside it
  const DeviceModel value = profiled_model(p);
  CHECK(value.name == "H100");
  CHECK(value.source == "h100-test profile, measured");
  CHECK(value.fp16_flops == 989e12);  // the catalogue's peak
  CHECK(value.compute_efficiency[1] == 0.8);
  CHECK(value.compute_efficiency[0] == 1.0);  // fp32: not in the profile, the datasheet's
  CHECK(value.attention_efficiency == 0.6);
  CHECK(value.memory_bandwidth == Bandwidth::GBps(3000));
  CHECK(value.launch_overhead == Time::us(2));
  CHECK(value.fp8_efficiency == 0.7);
  CHECK(value.eager_host_per_kernel == Time::us(5));
  const plan::KernelList::Gemm big{4096, 4096, 4096, 1};
  CHECK(value.gemm_time(4096, 4096, 4096, plan::DType::bf16) == Time::us(200));  // measured exactly

  // The low end is the slow one: efficiencies and bandwidth low, the launch
  // high, the measured bf16 GEMM 0.8 / 0.5 = 1.6 times slower (320 us); the
  // f32 one keeps its time (the profile has no fp32 spread).
  const DeviceModel low = profiled_model(p, SpreadEnd::low);
  CHECK(low.source == "h100-test profile, measured, low end");
  CHECK(low.compute_efficiency[1] == 0.5);
  CHECK(low.attention_efficiency == 0.4);
  CHECK(low.memory_bandwidth == Bandwidth::GBps(2000));
  CHECK(low.launch_overhead == Time::us(5));
  CHECK(low.fp8_efficiency == 0.6);
  CHECK(low.eager_host_per_kernel == Time::us(8));  // more host work is slower
  CHECK(low.measured_gemm(big, plan::DType::bf16)->time == Time::us(320));
  CHECK(low.gemm_time(1024, 1024, 1024, plan::DType::f32) == Time::us(60));
  // The high end: 0.8 / 0.9 of 200 us, rounded up to a picosecond.
  const DeviceModel high = profiled_model(p, SpreadEnd::high);
  CHECK(high.compute_efficiency[1] == 0.9);
  CHECK(high.launch_overhead == Time::us(1));
  CHECK(high.fp8_efficiency == 0.75);
  CHECK(high.eager_host_per_kernel == Time::us(3));
  CHECK(std::abs(high.gemm_time(4096, 4096, 4096, plan::DType::bf16).seconds() - 200e-6 * 0.8 / 0.9) < 1e-12);
}

TEST_CASE("the bundled profiles cover every modelled GPU once, each figure sourced", "[profiles]") {
  const auto all = load_profile_dir(MESHSIM_SOURCE_DIR "/configs/profiles");
  std::vector<std::string> models;
  for (const auto* g : hardware::gpus())
    if (g->modelled()) {
      const LoadedProfile* p = profile_for(all, g->name);
      CHECK(p != nullptr);
      if (p == nullptr) continue;
      models.push_back(p->profile.gpu_model);
      // Achieved is below the datasheet: every efficiency under 1, the
      // memory bandwidth under the catalogue's.
      const DeviceModel m = profiled_model(*p);
      CHECK(m.compute_efficiency[1] < 1.0);
      CHECK(m.memory_bandwidth < g->memory_bandwidth);
      CHECK(m.launch_overhead > Time::zero());
      CHECK(m.eager_host_per_kernel > Time::zero());  // every profile has the eager framework's figure
      // FP8 GEMMs reach a smaller share of their twice-as-high peak than bf16's (published cuBLASLt runs).
      if (m.fp8_flops > 0) {
        REQUIRE(m.fp8_efficiency);
        CHECK(*m.fp8_efficiency < m.compute_efficiency[1]);
      }
    }
  CHECK(models.size() == all.size());
  // The H100's is our own measurement, with its measured GEMMs; the part no one here measured is an estimate.
  CHECK(profile_for(all, "H100")->profile.status == plan::ProfileStatus::measured);
  CHECK(profile_for(all, "H100")->points.size() > 500);
  CHECK(profile_for(all, "B200")->profile.status == plan::ProfileStatus::estimate);
}

TEST_CASE("a cluster takes the profile of each of its GPU models", "[profiles]") {
  const auto all = load_profile_dir(MESHSIM_SOURCE_DIR "/configs/profiles");
  const topology::Topology t = cluster("dgx-a100", 2);
  const auto models = profiled_models(t, all);
  REQUIRE(models.size() == 1);
  CHECK(models[0].name == "A100");
  CHECK(models[0].source == "a100-sxm-40gb profile, published");
  CHECK(profiled_models(t, {}).empty());
}

TEST_CASE("an eager framework's host work per kernel is the cluster's profiles' largest", "[profiles]") {
  const LoadedProfile p = load_profile(kData + "h100-test.json");
  const topology::Topology t = cluster("dgx-h100", 1);
  CHECK(eager_host_per_kernel(t, {profiled_model(p)}) == Time::us(5));
  CHECK(eager_host_per_kernel(t, {profiled_model(p, SpreadEnd::low)}) == Time::us(8));
  // The datasheet model has no such figure: refused, naming the GPU and where its model comes from.
  CHECK_THROWS_WITH(eager_host_per_kernel(t, {}),
                    Catch::Contains("the H100's compute model (datasheet peak)"));
}

TEST_CASE("a calibration of another GPU model is named, and can be taken for the cluster's", "[profiles]") {
  const topology::Topology t = cluster("dgx-a100", 1);
  const plan::Calibration h100 =
      plan::load_calibration_file(MESHSIM_SOURCE_DIR "/tests/data/calibrations/h100-two-gemms.json");
  CHECK(calibration_gpu_mismatch(h100, t) == "it measured the H100, and the cluster's GPUs are the A100");
  const topology::Topology h = cluster("dgx-h100", 1);
  CHECK_FALSE(calibration_gpu_mismatch(h100, h).has_value());
  // Taken anyway: the H100's 0.8 on the A100's own peak, no H100 GEMM times.
  const auto models = retargeted_models(h100, t, {}, "c.json");
  REQUIRE(models.size() == 1);
  CHECK(models[0].name == "A100");
  CHECK(models[0].fp16_flops == 312e12);
  CHECK(models[0].compute_efficiency[1] == 0.8);
  CHECK(models[0].measured_gemms.empty());
  CHECK(models[0].source == "calibration c.json of the H100");
}
