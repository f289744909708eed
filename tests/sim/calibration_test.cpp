#include "plan/calibration.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "sim/calibrate_apply.h"
#include "sim/executor.h"
#include "topology/cluster.h"
#include "topology/virtual_gpu.h"

using namespace meshsim;
using namespace meshsim::sim;
using namespace meshsim::plan;

namespace {

Json minimal() {
  return Json::parse(R"({
    "format": "meshsim.calibration/1",
    "backend": "cuda",
    "machine": {"gpu": "NVIDIA H100 80GB HBM3"},
    "copy": {"bandwidth": "1TBps", "latency": "4us", "aggregate_bandwidth": "1.2TBps",
             "points": [{"size": "1MiB", "time": "5.048576us"}]},
    "links": {"nvlink": {"efficiency": 0.5, "latency": "2us"}},
    "compute": [{"gpu_model": "H100", "efficiency": {"fp16": 0.5}, "attention_efficiency": 0.6,
                 "launch_overhead": "2us"}]
  })");
}

}  // namespace

TEST_CASE("a copy fit recovers latency and bandwidth of exact measurements", "[calibration]") {
  // time = 5 us + S / 100 GB/s at 4 KiB, 1 MiB, 64 MiB, 1 GiB: the slope of the
  // two largest gives 100 GB/s, the smallest then gives 5 us.
  std::vector<CopyPoint> pts;
  for (Bytes s : {Bytes::KiB(4), Bytes::MiB(1), Bytes::MiB(64), Bytes::GiB(1)})
    pts.push_back({s, Time::us(5) + s / Bandwidth::GBps(100)});
  const CopyFit f = fit_copy(pts);
  CHECK(std::abs(f.bandwidth.bytes_per_second_f() / 100e9 - 1) < 1e-6);
  CHECK(std::abs(f.latency.seconds() - 5e-6) < 1e-9);
  CHECK(f.predict(Bytes::MiB(64)) == pts[2].time);
  CHECK_THROWS_AS(fit_copy({}), UsageError);
}

TEST_CASE("calibration files round-trip and name the path of mistakes", "[calibration]") {
  const Calibration c = calibration_from_json(minimal(), "c.json");
  CHECK(c.backend == "cuda");
  REQUIRE(c.copy);
  CHECK(c.copy->aggregate_bandwidth == Bandwidth::GBps(1200));
  const Json again = to_json(calibration_from_json(to_json(c), "c.json"));
  CHECK(again == to_json(c));

  auto bad = [](const char* pointer, Json v, const std::string& path) {
    Json j = minimal();
    j[Json::json_pointer(pointer)] = std::move(v);
    try {
      (void)calibration_from_json(j, "c.json");
      FAIL("accepted a bad calibration at " << path);
    } catch (const ConfigError& e) {
      CHECK(e.json_path() == path);
    }
  };
  bad("/links/nvlink/efficiency", 1.5, "links.nvlink.efficiency");
  bad("/copy/bandwidth", "1TB", "copy.bandwidth");
  bad("/format", "meshsim.calibration/2", "format");
  bad("/backend", "rocm", "backend");
  bad("/compute/0/efficiency/fp8", 0.5, "compute[0].efficiency.fp8");
  bad("/compute/0/attention_efficiency", 1.5, "compute[0].attention_efficiency");
  bad("/links/nvlink/latency", "-1us", "links.nvlink.latency");
  // A measurement of a negative or zero time or size is no measurement.
  bad("/copy/points/0/time", "-5ns", "copy.points[0].time");
  bad("/copy/points/0/size", "0B", "copy.points[0].size");
  Json with_collective = minimal();
  with_collective["collectives"] =
      Json::parse(R"([{"op": "all_reduce", "gpus": 8, "size": "1GiB", "time": "5ms", "busbw_GBps": 375.8}])");
  CHECK(calibration_from_json(with_collective, "c.json").collectives.size() == 1);
  for (const auto& [key, v] :
       {std::pair<std::string, Json>{"time", "-1ms"}, {"size", "0B"}, {"busbw_GBps", -3.0}}) {
    Json j = with_collective;
    j["collectives"][0][key] = v;
    try {
      (void)calibration_from_json(j, "c.json");
      FAIL("accepted a bad collective " << key);
    } catch (const ConfigError& e) {
      CHECK(e.json_path() == "collectives[0]." + key);
    }
  }

  // Link kinds are the topology's: checked when the calibration is applied.
  Json j = minimal();
  j["links"]["nvlnk"] = Json::object();
  const Calibration typo = calibration_from_json(j, "c.json");
  topology::ClusterSpec cs;
  cs.host_preset = "dgx-h100";
  auto topo = topology::build_cluster(cs);
  try {
    apply_links(typo, topo, "c.json");
    FAIL("applied an unknown link kind");
  } catch (const ConfigError& e) {
    CHECK(e.json_path() == "links.nvlnk");
    CHECK_THAT(e.message(), Catch::Matchers::Contains("unknown link kind \"nvlnk\""));
  }
}

TEST_CASE("calibrated links and compute change the simulation", "[calibration]") {
  // DGX-H100: GPU-GPU goes over 18 NVLink lanes of 25 GB/s at the preset
  // efficiency. With nvlink efficiency 0.5 the route's bottleneck is
  // 18 x 25 x 0.5 = 225 GB/s and each of its 2 hops costs 2 us.
  topology::ClusterSpec cs;
  cs.host_preset = "dgx-h100";
  cs.hosts = 1;
  auto topo = topology::build_cluster(cs);
  const Calibration c = calibration_from_json(minimal(), "c.json");
  apply_links(c, topo, "c.json");
  const auto& r = topo.route(topo.at("h0/gpu0"), topo.at("h0/gpu1"));
  CHECK(r.bottleneck == Bandwidth::GBps(225));
  CHECK(r.latency == Time::us(4));

  // A compute-bound bf16 task of 989e12 x 1e-3 FLOPs takes 1 ms at the H100
  // peak; at efficiency 0.5 it takes 2 ms, plus the 2 us launch overhead.
  Plan p;
  Task t;
  t.id = "gemm";
  t.devices = {device_index(p, "h0/gpu0")};
  t.flops = 989e9;
  t.dtype = DType::bf16;
  p.tasks.push_back(t);
  SimOptions o;
  o.device_models = calibrated_models(c, "c.json");
  const auto res = simulate(p, topo, o);
  CHECK(std::abs(res.makespan.seconds() - (2e-3 + 2e-6)) < 1e-9);
  // Fused attention keeps its own fraction, 0.6, beside the GEMMs' 0.5.
  REQUIRE(o.device_models.size() == 1);
  CHECK(o.device_models[0].attention_efficiency == 0.6);
  Calibration unknown = c;
  unknown.compute[0].gpu_model = "B100";
  CHECK_THROWS_AS(calibrated_models(unknown, "c.json"), ConfigError);
}

TEST_CASE("virtual devices of one GPU share its copy bandwidth", "[calibration][virtual]") {
  // Single copy 100 GB/s, aggregate 150 GB/s, latency 10 us. One 1 GB send
  // takes 10 us + 10 ms. Two sends between disjoint pairs at once share the
  // 150 GB/s: 75 GB/s each, 10 us + 13.333 ms.
  const auto v = topology::virtual_gpu_topology({"h0/gpu0", "h0/gpu1", "h1/gpu0", "h1/gpu1"}, "H200",
                                                Bandwidth::GBps(100), Bandwidth::GBps(150), Time::us(10));
  SimOptions o;
  o.shared_link = v.memory;
  auto send = [](Plan& p, const std::string& id, const std::string& a, const std::string& b) {
    Task t;
    t.id = id;
    t.kind = TaskKind::send;
    t.devices = {device_index(p, a), device_index(p, b)};
    t.size = Bytes(1'000'000'000);
    return t;
  };
  Plan one;
  one.tasks.push_back(send(one, "a", "h0/gpu0", "h1/gpu1"));
  CHECK(std::abs(simulate(one, v.topology, o).makespan.seconds() - (10e-6 + 10e-3)) < 1e-9);
  Plan two = one;
  two.tasks.push_back(send(two, "b", "h1/gpu0", "h0/gpu1"));
  CHECK(std::abs(simulate(two, v.topology, o).makespan.seconds() - (10e-6 + 1.0 / 75)) < 1e-8);
  CHECK_THROWS_AS(topology::virtual_gpu_topology({}, "H200", Bandwidth::GBps(1), Bandwidth::GBps(1), Time{}),
                  UsageError);
}

TEST_CASE("every copy of a collective or broadcast on virtual devices crosses the one memory",
          "[calibration][virtual]") {
  // Single copy 100 GB/s, aggregate 150 GB/s, latency 10 us.
  const auto v = topology::virtual_gpu_topology({"h0/gpu0", "h0/gpu1", "h0/gpu2", "h0/gpu3"}, "H200",
                                                Bandwidth::GBps(100), Bandwidth::GBps(150), Time::us(10));
  SimOptions o;
  o.shared_link = v.memory;
  // All-gather of 1.2 GB over 4 devices: each receives 0.9 GB, 3.6 GB in all
  // through the memory: 24 ms at 150 GB/s (one device's 0.9 GB alone would
  // take 9 ms at 100 GB/s), plus the ring's latencies (well under 0.5 ms).
  Plan ag;
  Task t;
  t.id = "ag";
  t.kind = TaskKind::collective;
  t.op = CollectiveOp::all_gather;
  for (const char* d : {"h0/gpu0", "h0/gpu1", "h0/gpu2", "h0/gpu3"}) t.devices.push_back(device_index(ag, d));
  t.size = Bytes(1'200'000'000);
  ag.tasks.push_back(t);
  const double s = simulate(ag, v.topology, o).makespan.seconds();
  CHECK(s >= 24e-3);
  CHECK(s < 24.5e-3);
  // A fluid broadcast of 1 GB down a chain of 3 devices copies it twice:
  // 2 GB through the memory, 13.33 ms (each hop alone: 10 ms).
  Plan bc;
  Task b;
  b.id = "bc";
  b.kind = TaskKind::broadcast;
  for (const char* d : {"h0/gpu0", "h0/gpu1", "h0/gpu2"}) b.devices.push_back(device_index(bc, d));
  b.size = Bytes(1'000'000'000);
  b.chunk = Bytes::MiB(1);
  bc.tasks.push_back(b);
  o.fluid_broadcast = true;
  const double f = simulate(bc, v.topology, o).makespan.seconds();
  CHECK(f >= 2.0 / 150);
  CHECK(f < 2.0 / 150 + 0.2e-3);
}

TEST_CASE("the cuda backend's virtual devices are the calibrated GPU", "[calibration][virtual]") {
  // A plan made for p3.8xlarge (V100) runs its compute on the GPU the
  // calibration measured, so the cuda prediction uses that GPU's model; the
  // host backend keeps the topology's.
  topology::ClusterSpec cs;
  cs.host_preset = "p3.8xlarge";
  cs.hosts = 1;
  const auto topo = topology::build_cluster(cs);
  Plan p;
  (void)device_index(p, "h0/gpu0");
  (void)device_index(p, "h0/gpu1");
  Calibration c;
  c.backend = "cuda";
  c.copy = CopyFit{Bandwidth::GBps(1500), Time::us(2), std::nullopt, {}};
  ComputeCalibration h100;
  h100.gpu_model = "H100";
  c.compute.push_back(h100);
  const auto cuda = virtual_machine(p, topo, c);
  CHECK(cuda.topology.node(cuda.topology.at("h0/gpu1")).model == "H100");
  c.backend = "host";
  const auto host = virtual_machine(p, topo, c);
  CHECK(host.topology.node(host.topology.at("h0/gpu1")).model == "V100");
  c.copy.reset();
  CHECK_THROWS_AS(virtual_machine(p, topo, c), UsageError);
}

TEST_CASE("measured GEMMs replace the model for exactly their shapes", "[calibration][gemm]") {
  Json j = minimal();
  j["compute"][0]["points"] = Json::parse(R"([
    {"dtype": "f16", "m": 2048, "n": 6144, "k": 2048, "batch": 1, "time": "83.4us"},
    {"dtype": "bf16", "n": 8192, "flops": 1.1e12, "time": "1.4ms"}])");
  const Calibration c = calibration_from_json(j, "c.json");
  REQUIRE(c.compute[0].points.size() == 2);
  CHECK(c.compute[0].points[1].shape == KernelList::Gemm{8192, 8192, 8192, 1});  // the older square form
  CHECK(to_json(calibration_from_json(to_json(c), "c.json")) == to_json(c));

  const auto models = calibrated_models(c, "c.json");
  const DeviceModel& h = models.at(0);
  DeviceModel plain = h;
  plain.measured_gemms.clear();
  CHECK(h.gemm_time(2048, 6144, 2048, DType::f16) == Time::ns(83400));
  CHECK(h.gemm_time(8192, 8192, 8192, DType::bf16) == Time::us(1400));
  CHECK(plain.gemm_time(2048, 6144, 2048, DType::f16) != Time::ns(83400));
  // Only points of the GEMM's own dtype correct it: with k 512 the f16
  // point is within a factor 4 but the bf16 one (8192³) is not.
  CHECK(h.gemm_time(2048, 6144, 512, DType::bf16) == plain.gemm_time(2048, 6144, 512, DType::bf16));
  // Within a factor 4 of the measured shape in each of (larger of m and n,
  // smaller, k, batch): the model scaled by the measurement's ratio, 83.4 us
  // over the model's time for the measured shape. m and n swapped, a batch
  // of 2 and k four times as large all are.
  const double ratio = 83.4e-6 / plain.gemm_time(2048, 6144, 2048, DType::f16).seconds();
  auto scaled = [&](double m, double n, double k, double batch) {
    return plain.gemm_time(m, n, k, DType::f16, batch).seconds() * ratio;
  };
  CHECK(h.gemm_time(6144, 2048, 2048, DType::f16).seconds() == Approx(scaled(6144, 2048, 2048, 1)));
  CHECK(h.gemm_time(2048, 6144, 2048, DType::f16, 2).seconds() == Approx(scaled(2048, 6144, 2048, 2)));
  CHECK(h.gemm_time(2048, 6144, 8192, DType::f16).seconds() == Approx(scaled(2048, 6144, 8192, 1)));
  // Farther in one of them (a batch of 8, k eight times as large): the model alone.
  CHECK(h.gemm_time(2048, 6144, 2048, DType::f16, 8) == plain.gemm_time(2048, 6144, 2048, DType::f16, 8));
  CHECK(h.gemm_time(2048, 6144, 16384, DType::f16) == plain.gemm_time(2048, 6144, 16384, DType::f16));
  // A kernel list: measured GEMMs plus modelled memory-bound kernels.
  KernelList k;
  k.dtype = DType::f16;
  k.gemms = {{2048, 6144, 2048, 1}, {2048, 6144, 2048, 1}};
  k.memory_bytes = {Bytes::MiB(8)};
  CHECK(h.kernels_time(k) == Time::ns(2 * 83400) + h.kernel_time(0, Bytes::MiB(8), DType::f16));
  // A second measurement of a shape replaces the first.
  DeviceModel r = h;
  r.add_measured_gemm({DType::f16, {2048, 6144, 2048, 1}, Time::us(90)});
  CHECK(r.measured_gemms.size() == 2);
  CHECK(r.gemm_time(2048, 6144, 2048, DType::f16) == Time::us(90));

  auto bad = [](const char* point, const std::string& path) {
    Json b = minimal();
    b["compute"][0]["points"] = Json::array({Json::parse(point)});
    try {
      (void)calibration_from_json(b, "c.json");
      FAIL("accepted a bad GEMM point, expected an error at " << path);
    } catch (const ConfigError& e) {
      CHECK(e.json_path() == path);
    }
  };
  bad(R"({"dtype": "f16", "n": 8, "k": 8, "time": "1us"})", "compute[0].points[0].k");
  bad(R"({"dtype": "f16", "m": 8, "n": 8, "k": 0, "time": "1us"})", "compute[0].points[0].k");
  bad(R"({"dtype": "f16", "m": 8, "n": 8, "k": 8, "time": "0us"})", "compute[0].points[0].time");
  bad(R"({"dtype": "f16", "m": 8, "n": 8, "k": 8, "batch": 1.5, "time": "1us"})",
      "compute[0].points[0].batch");
  bad(R"({"dtype": "f16", "m": 8, "n": 8, "k": 8, "time": "1us", "tflops": 3})",
      "compute[0].points[0].tflops");
}

TEST_CASE("a link's spread round-trips and lies around its figure", "[calibration]") {
  Json j = minimal();
  j["links"]["nvlink"]["spread"] = Json::parse(R"({"efficiency": [0.4, 0.6], "latency": ["1us", "3us"]})");
  const Calibration c = calibration_from_json(j, "c.json");
  REQUIRE(c.links.size() == 1);
  CHECK(c.links[0].efficiency_spread == std::pair{0.4, 0.6});
  CHECK(c.links[0].latency_spread == std::pair{Time::us(1), Time::us(3)});
  const Calibration back = calibration_from_json(to_json(c), "back.json");
  CHECK(back.links[0].efficiency_spread == c.links[0].efficiency_spread);
  CHECK(back.links[0].latency_spread == c.links[0].latency_spread);
  // Applied at its ends: the slow end has the low efficiency and the long latency.
  topology::ClusterSpec cs;
  cs.host_preset = "dgx-h100";
  auto topo = topology::build_cluster(cs);
  apply_links(c, topo, "c.json", SpreadEnd::low);
  for (topology::LinkId id = 0; id < topo.link_count(); ++id)
    if (topo.link(id).kind == topology::LinkKind::nvlink) {
      CHECK(topo.link(id).efficiency == 0.4);
      CHECK(topo.link(id).latency == Time::us(3));
      break;
    }
  Json bad = j;
  bad["links"]["nvlink"]["spread"]["efficiency"] = Json::parse("[0.6, 0.4]");
  CHECK_THROWS_WITH(calibration_from_json(bad, "c.json"), Catch::Contains("links.nvlink.spread.efficiency"));
  bad = j;
  bad["links"]["nvlink"]["spread"]["efficiency"] = Json::parse("[0.1, 0.2]");  // 0.5 lies outside
  CHECK_THROWS_WITH(calibration_from_json(bad, "c.json"), Catch::Contains("outside its spread"));
}
