#include "plan/calibration.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "plan/json_fields.h"

namespace meshsim::plan {

namespace {

constexpr const char* kFormat = "meshsim.calibration/1";

Time measured_time(const JsonCursor& c) {
  const Time t = c.as_time();
  if (t <= Time::zero()) c.fail("a measured time is greater than zero");
  return t;
}

CopyFit copy_from(const JsonCursor& c) {
  c.allow_only({"bandwidth", "latency", "aggregate_bandwidth", "points"});
  CopyFit f;
  f.bandwidth = positive_bandwidth(c["bandwidth"]);
  f.latency = non_negative_time(c["latency"]);
  if (auto a = c.find("aggregate_bandwidth")) f.aggregate_bandwidth = positive_bandwidth(*a);
  if (auto p = c.find("points"))
    for (std::size_t i = 0; i < p->size(); ++i) {
      const JsonCursor pt = p->at(i);
      pt.allow_only({"size", "time"});
      f.points.push_back({positive_size(pt["size"]), measured_time(pt["time"])});
    }
  return f;
}

Json copy_to(const CopyFit& f) {
  Json j{{"bandwidth", exact_string(f.bandwidth)}, {"latency", exact_string(f.latency)}};
  if (f.aggregate_bandwidth) j["aggregate_bandwidth"] = exact_string(*f.aggregate_bandwidth);
  Json pts = Json::array();
  for (const auto& p : f.points)
    pts.push_back(Json{{"size", exact_string(p.size)}, {"time", exact_string(p.time)}});
  j["points"] = std::move(pts);
  return j;
}

// {"dtype", "m", "n", "k", "batch" (default 1), "time"}, or the older
// square form {"dtype", "n", "flops", "time"} (m = k = n; flops ignored).
GemmPoint gemm_point(const JsonCursor& pt) {
  pt.allow_only({"dtype", "m", "n", "k", "batch", "flops", "time"});
  constexpr std::int64_t kMaxDim = 2147483647;  // cuBLAS's int
  auto dim = [&](const char* key) { return static_cast<double>(pt[key].as_int_in(1, kMaxDim)); };
  GemmPoint g;
  g.dtype = dtype_from_json(pt["dtype"]);
  const double n = dim("n");
  const bool square = !pt.find("m");
  if (square && pt.find("k")) pt["k"].fail("\"k\" needs \"m\" (without both, the GEMM is n x n x n)");
  g.shape = {square ? n : dim("m"), n, square ? n : dim("k"), pt.find("batch") ? dim("batch") : 1.0};
  g.time = measured_time(pt["time"]);
  return g;
}

}  // namespace

Bandwidth round_rate(double bytes_per_second) {
  const auto mb = std::max<std::int64_t>(1, std::llround(bytes_per_second / 1e6));
  return Bandwidth::bytes_per_second(mb * 1'000'000);
}

Time CopyFit::predict(Bytes s) const {
  return latency + s / bandwidth;
}

bool gemm_before(const GemmPoint& a, const GemmPoint& b) {
  return std::tuple(a.dtype, a.shape.m, a.shape.n, a.shape.k, a.shape.batch) <
         std::tuple(b.dtype, b.shape.m, b.shape.n, b.shape.k, b.shape.batch);
}

CopyFit fit_copy(std::vector<CopyPoint> points) {
  if (points.empty()) throw UsageError("a copy fit needs measurements");
  std::sort(points.begin(), points.end(),
            [](const CopyPoint& a, const CopyPoint& b) { return a.size < b.size; });
  CopyFit f;
  const CopyPoint& big = points.back();
  double bytes_per_s = static_cast<double>(big.size.count()) / std::max(big.time.seconds(), 1e-12);
  if (points.size() >= 2) {
    const CopyPoint& prev = points[points.size() - 2];
    const double dt = big.time.seconds() - prev.time.seconds();
    const double ds = static_cast<double>(big.size.count() - prev.size.count());
    if (dt > 0 && ds > 0) bytes_per_s = ds / dt;
  }
  f.bandwidth = round_rate(bytes_per_s);
  const Time small = points.front().time - points.front().size / f.bandwidth;
  f.latency = std::max(Time::zero(), small);
  f.points = std::move(points);
  return f;
}

Calibration calibration_from_json(const Json& j, const std::string& file) {
  const JsonCursor root(j, file);
  if (!root.is_object()) root.fail("a calibration is a JSON object");
  root.allow_only({"format", "backend", "machine", "copy", "host_to_device", "device_to_host", "peers",
                   "links", "compute", "collectives"});
  root.require_format(kFormat);
  Calibration c;
  c.backend = root["backend"].as_name();
  if (c.backend != "host" && c.backend != "cuda" && c.backend != "nccl")
    root["backend"].fail("expected host, cuda or nccl");
  if (auto m = root.find("machine")) {
    if (!m->is_object()) m->fail("expected an object");
    c.machine = m->json();
  }
  if (auto x = root.find("copy")) c.copy = copy_from(*x);
  if (auto x = root.find("host_to_device")) c.host_to_device = copy_from(*x);
  if (auto x = root.find("device_to_host")) c.device_to_host = copy_from(*x);
  if (auto p = root.find("peers"))
    for (std::size_t i = 0; i < p->size(); ++i) {
      const JsonCursor e = p->at(i);
      e.allow_only({"src", "dst", "bandwidth", "latency", "aggregate_bandwidth", "points"});
      PeerFit pf;
      pf.src = static_cast<int>(e["src"].as_int_in(0, 1023));
      pf.dst = static_cast<int>(e["dst"].as_int_in(0, 1023));
      Json rest = e.json();
      rest.erase("src");
      rest.erase("dst");
      pf.fit = copy_from(JsonCursor(rest, file, e.path()));
      c.peers.push_back(std::move(pf));
    }
  if (auto l = root.find("links")) {
    if (!l->is_object()) l->fail("expected an object keyed by link kind");
    for (const auto& [kind, _] : l->json().items()) {
      const JsonCursor e = (*l)[kind];
      e.allow_only({"efficiency", "latency", "spread"});
      LinkCalibration lc;
      lc.kind = kind;
      if (auto x = e.find("efficiency")) lc.efficiency = fraction(*x);
      if (auto x = e.find("latency")) lc.latency = non_negative_time(*x);
      if (auto sp = e.find("spread")) {
        sp->allow_only({"efficiency", "latency"});
        // [low, high], low at most high, the figure itself (when given) between them.
        auto pair = [](const JsonCursor& at, auto read, auto value) {
          if (at.size() != 2) at.fail("a spread is [low, high]");
          const auto lo = read(at.at(0)), hi = read(at.at(1));
          if (hi < lo) at.fail("a spread's low end is above its high end");
          if (value && (*value < lo || hi < *value)) at.fail("the figure lies outside its spread");
          return std::pair{lo, hi};
        };
        if (auto x = sp->find("efficiency")) lc.efficiency_spread = pair(*x, fraction, lc.efficiency);
        if (auto x = sp->find("latency")) lc.latency_spread = pair(*x, non_negative_time, lc.latency);
      }
      c.links.push_back(lc);
    }
  }
  if (auto cm = root.find("compute"))
    for (std::size_t i = 0; i < cm->size(); ++i) {
      const JsonCursor e = cm->at(i);
      e.allow_only({"gpu_model", "efficiency", "attention_efficiency", "launch_overhead", "memory_bandwidth",
                    "points"});
      ComputeCalibration cc;
      cc.gpu_model = e["gpu_model"].as_name();
      if (auto x = e.find("efficiency")) {
        if (!x->is_object()) x->fail("expected an object keyed by fp32, fp16, fp64, int8");
        x->allow_only({"fp32", "fp16", "fp64", "int8"});
        for (std::size_t k = 0; k < kDTypeClasses; ++k)
          if (auto v = x->find(kDTypeClassNames.name(static_cast<DTypeClass>(k))))
            cc.efficiency[k] = fraction(*v);
      }
      if (auto x = e.find("attention_efficiency")) cc.attention_efficiency = fraction(*x);
      if (auto x = e.find("launch_overhead")) cc.launch_overhead = non_negative_time(*x);
      if (auto x = e.find("memory_bandwidth")) cc.memory_bandwidth = positive_bandwidth(*x);
      if (auto p = e.find("points"))
        for (std::size_t k = 0; k < p->size(); ++k) {
          cc.points.push_back(gemm_point(p->at(k)));
        }
      c.compute.push_back(std::move(cc));
    }
  if (auto cl = root.find("collectives"))
    for (std::size_t i = 0; i < cl->size(); ++i) {
      const JsonCursor e = cl->at(i);
      e.allow_only({"op", "gpus", "size", "time", "busbw_GBps"});
      const double busbw = e["busbw_GBps"].as_number();
      if (!(busbw >= 0)) e["busbw_GBps"].fail("a bandwidth is not negative");
      c.collectives.push_back({e["op"].as_name(), static_cast<int>(e["gpus"].as_int_in(1, 1 << 20)),
                               positive_size(e["size"]), measured_time(e["time"]), busbw});
    }
  return c;
}

Calibration load_calibration_file(const std::string& file) {
  return calibration_from_json(read_json_file(file), file);
}

Json to_json(const Calibration& c) {
  Json j{{"format", kFormat}, {"backend", c.backend}, {"machine", c.machine}};
  if (c.copy) j["copy"] = copy_to(*c.copy);
  if (c.host_to_device) j["host_to_device"] = copy_to(*c.host_to_device);
  if (c.device_to_host) j["device_to_host"] = copy_to(*c.device_to_host);
  if (!c.peers.empty()) {
    Json p = Json::array();
    for (const auto& pf : c.peers) {
      Json e{{"src", pf.src}, {"dst", pf.dst}};
      e.update(copy_to(pf.fit));
      p.push_back(std::move(e));
    }
    j["peers"] = std::move(p);
  }
  if (!c.links.empty()) {
    Json l = Json::object();
    for (const auto& lc : c.links) {
      Json e = Json::object();
      if (lc.efficiency) e["efficiency"] = *lc.efficiency;
      if (lc.latency) e["latency"] = exact_string(*lc.latency);
      Json spread = Json::object();
      if (lc.efficiency_spread)
        spread["efficiency"] = Json::array({lc.efficiency_spread->first, lc.efficiency_spread->second});
      if (lc.latency_spread)
        spread["latency"] =
            Json::array({exact_string(lc.latency_spread->first), exact_string(lc.latency_spread->second)});
      if (!spread.empty()) e["spread"] = std::move(spread);
      l[lc.kind] = std::move(e);
    }
    j["links"] = std::move(l);
  }
  if (!c.compute.empty()) {
    Json a = Json::array();
    for (const auto& cc : c.compute) {
      Json e{{"gpu_model", cc.gpu_model}};
      Json eff = Json::object();
      for (std::size_t k = 0; k < kDTypeClasses; ++k)
        if (cc.efficiency[k])
          eff[std::string(kDTypeClassNames.name(static_cast<DTypeClass>(k)))] = *cc.efficiency[k];
      e["efficiency"] = std::move(eff);
      if (cc.attention_efficiency) e["attention_efficiency"] = *cc.attention_efficiency;
      if (cc.launch_overhead) e["launch_overhead"] = exact_string(*cc.launch_overhead);
      if (cc.memory_bandwidth) e["memory_bandwidth"] = exact_string(*cc.memory_bandwidth);
      Json pts = Json::array();
      for (const auto& p : cc.points)
        pts.push_back(Json{{"dtype", std::string(to_string(p.dtype))},
                           {"m", static_cast<std::int64_t>(p.shape.m)},
                           {"n", static_cast<std::int64_t>(p.shape.n)},
                           {"k", static_cast<std::int64_t>(p.shape.k)},
                           {"batch", static_cast<std::int64_t>(p.shape.batch)},
                           {"time", exact_string(p.time)}});
      e["points"] = std::move(pts);
      a.push_back(std::move(e));
    }
    j["compute"] = std::move(a);
  }
  if (!c.collectives.empty()) {
    Json a = Json::array();
    for (const auto& p : c.collectives)
      a.push_back(Json{{"op", p.op},
                       {"gpus", p.gpus},
                       {"size", exact_string(p.size)},
                       {"time", exact_string(p.time)},
                       {"busbw_GBps", p.busbw_GBps}});
    j["collectives"] = std::move(a);
  }
  return j;
}

}  // namespace meshsim::plan
