#include "sim/compute_model.h"

#include <catch2/catch.hpp>

using namespace meshsim;
using namespace meshsim::sim;

namespace {
// A V100 (80 SMs, 125 TFLOP/s fp16, 900 GB/s) at its peak: each SM
// computes 125e12 / 80 = 1.5625e12 FLOP/s.
DeviceModel v100() {
  DeviceModel d = *find_device_model("V100");
  REQUIRE(d.sms == 80);
  d.compute_efficiency.fill(1.0);
  return d;
}
}  // namespace

TEST_CASE("a GEMM whose tiles fill whole waves takes the roofline time", "[compute]") {
  // 1280 x 1024 output in 128 x 128 tiles: 10 x 8 = 80 tiles, one wave;
  // each tile 2·128·128·1024 FLOPs = 33.55 MFLOP in 21.47 us, the same as
  // 2·1280·1024·1024 FLOPs at 125 TFLOP/s (memory: 7.3 MB, 8.2 us).
  const DeviceModel d = v100();
  const Time t = d.gemm_time(1280, 1024, 1024, plan::DType::f16);
  CHECK(t == d.kernel_time(2.0 * 1280 * 1024 * 1024, Bytes(7'340'032), plan::DType::f16));
  CHECK(t.seconds() == Approx(21.475e-6 + 4e-6).epsilon(1e-3));
}

TEST_CASE("a GEMM one row past a tile boundary pays for whole tiles and waves", "[compute]") {
  // m = 2049, n = k = 4096. The best tiling is 64 x 64: 33 x 64 = 2,112
  // tiles in 27 waves of 80 (26.4 rounded up), each 2·64·64·4096 FLOPs =
  // 33.55 MFLOP per SM in 21.47 us: 579.8 us, where the roofline says
  // 2·2049·4096·4096 / 125e12 = 550.0 us. (128 x 128 tiles: 17 x 32 =
  // 544 tiles, 7 waves of 85.9 us = 601 us; 256 x 128: 4 waves, 687 us.)
  const DeviceModel d = v100();
  const Time t = d.gemm_time(2049, 4096, 4096, plan::DType::f16);
  CHECK(t.seconds() == Approx(27 * 21.4748e-6 + 4e-6).epsilon(1e-4));
  CHECK(d.kernel_time(2.0 * 2049 * 4096 * 4096, Bytes(0), plan::DType::f16).seconds() ==
        Approx(550.04e-6 + 4e-6).epsilon(1e-4));
}

TEST_CASE("a thin GEMM is bound by reading its weights", "[compute]") {
  // 64 tokens through a 2048 x 6144 weight: 64 x 128 tiles, 48 of them in
  // one wave, 21.5 us of compute; reading A, B and writing C is
  // (64·2048 + 2048·6144 + 64·6144) · 2 bytes = 26.2 MB, 29.1 us at 900 GB/s.
  const DeviceModel d = v100();
  CHECK(d.gemm_time(64, 6144, 2048, plan::DType::f16).seconds() ==
        Approx(26'214'400 / 900e9 + 4e-6).epsilon(1e-4));
}

TEST_CASE("without an SM count a GEMM is the roofline", "[compute]") {
  DeviceModel d = v100();
  d.sms = 0;
  CHECK(d.gemm_time(2049, 4096, 4096, plan::DType::f16) ==
        d.kernel_time(2.0 * 2049 * 4096 * 4096, Bytes(2 * (2049 * 4096 + 4096 * 4096 + 2049 * 4096)),
                      plan::DType::f16));
}
