#pragma once
// Calibration: measurements of a real machine (meshsim calibrate) that
// replace the preset numbers in every simulation. Format
// `meshsim.calibration/1` (docs/calibration-format.md):
//
//   backend     the runtime backend that measured (host, cuda, nccl)
//   machine     free-form description (GPU name, driver, ...)
//   copy        copies between plan devices on that backend (virtual
//               devices: inside one GPU's memory): time(S) = latency + S/bandwidth
//               for one copy, and aggregate_bandwidth for copies on every
//               stream at once; points are the measurements
//   host_to_device, device_to_host   the same fit for the PCIe copies
//   peers       the same fit per ordered GPU pair (several GPUs)
//   links       per link kind (nvlink, pcie, smp, network): efficiency
//               (achieved / line rate) and hop latency; they replace those
//               of every link of that kind; optionally the spread of each,
//               {"spread": {"efficiency": [low, high], "latency": [low, high]}}
//   compute     per GPU model: achieved fraction of the dense peak per
//               dtype class (fp32, fp16, fp64, int8), fused attention's
//               own fraction, launch overhead, memory bandwidth; they
//               replace the built-in roofline's;
//               points: measured GEMMs (m, n, k, batch, dtype, time), which
//               replace the model's time for exactly that GEMM
//   collectives nccl-tests style points (op, GPUs, size, time, busbw)
//
// This file holds the data and its JSON form. The simulator applies them
// (sim/calibrate_apply.h): the topology's links change in place and compute
// models join the simulation options; everything not measured keeps its
// preset value.

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/units.h"
#include "plan/plan.h"

namespace meshsim::plan {

struct CopyPoint {
  Bytes size;
  Time time;
};

struct CopyFit {
  Bandwidth bandwidth;  // single copy, large sizes
  Time latency;         // time of a zero-byte copy
  std::optional<Bandwidth> aggregate_bandwidth;
  std::vector<CopyPoint> points;

  [[nodiscard]] Time predict(Bytes s) const;
};

/// A measured rate, rounded to whole MB/s (what the measurement can tell).
[[nodiscard]] Bandwidth round_rate(double bytes_per_second);

/// Fits time = latency + S / bandwidth: the bandwidth from the two largest
/// sizes (their slope; S/t of the largest if the slope is not positive), the
/// latency from the smallest (never negative). UsageError for no points.
[[nodiscard]] CopyFit fit_copy(std::vector<CopyPoint> points);

struct PeerFit {
  int src = 0;
  int dst = 0;
  CopyFit fit;
};

struct LinkCalibration {
  std::string kind;  // a topology link kind's name; the simulator checks it when applying
  std::optional<double> efficiency;
  std::optional<Time> latency;
  // The spread of each (low, high), where the calibration knows one (a fit's).
  std::optional<std::pair<double, double>> efficiency_spread;
  std::optional<std::pair<Time, Time>> latency_spread;
};

/// One measured GEMM: `batch` products of m × n × k in `dtype`, the time of
/// one call (back to back, so its launch included).
struct GemmPoint {
  DType dtype = kDefaultMathDType;
  KernelList::Gemm shape;
  Time time;

  [[nodiscard]] double flops() const { return 2 * shape.m * shape.n * shape.k * shape.batch; }
};

/// The order of measured GEMMs: by (dtype, m, n, k, batch), times ignored;
/// two points neither of which comes first measure the same GEMM.
[[nodiscard]] bool gemm_before(const GemmPoint& a, const GemmPoint& b);

struct ComputeCalibration {
  std::string gpu_model;
  std::array<std::optional<double>, 4> efficiency;  // by DTypeClass
  std::optional<Time> launch_overhead;
  std::optional<Bandwidth> memory_bandwidth;
  std::optional<double> attention_efficiency;  // fused attention's fraction of its dtype's peak
  std::vector<GemmPoint> points;
};

struct CollectivePoint {
  std::string op;  // all_reduce, all_gather, broadcast, ...
  int gpus = 0;
  Bytes size;
  Time time;
  double busbw_GBps = 0;
};

struct Calibration {
  std::string backend;
  Json machine = Json::object();
  std::optional<CopyFit> copy;
  std::optional<CopyFit> host_to_device;
  std::optional<CopyFit> device_to_host;
  std::vector<PeerFit> peers;
  std::vector<LinkCalibration> links;
  std::vector<ComputeCalibration> compute;
  std::vector<CollectivePoint> collectives;
};

/// ConfigError with the file and JSON path on any mistake.
[[nodiscard]] Calibration load_calibration_file(const std::string& file);
[[nodiscard]] Calibration calibration_from_json(const Json& j, const std::string& file);
[[nodiscard]] Json to_json(const Calibration& c);

}  // namespace meshsim::plan
