#include "sim/compute_model.h"

#include <catch2/catch.hpp>

#include "core/error.h"

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

TEST_CASE("a fused attention kernel runs at its own efficiency, the GEMMs' when unset", "[compute]") {
  // 16 heads of 1,024 queries against 512 keys of 64: forward 2 products,
  // 4·16·1024·512·64 = 2.147 GFLOP, 17.18 us at 125 TFLOP/s (memory: Q, K,
  // V, O, 4·16·1024·64·2 B = 8.4 MB, 9.3 us); at 50 %, 34.36 us.
  DeviceModel d = v100();
  const plan::KernelList::Attention a{16, 1024, 512, 64, false};
  CHECK(a.flops() == 2'147'483'648.0);
  CHECK(d.attention_time(a, plan::DType::f16).seconds() == Approx(17.18e-6 + 4e-6).epsilon(1e-3));
  d.attention_efficiency = 0.5;
  CHECK(d.attention_time(a, plan::DType::f16).seconds() == Approx(34.36e-6 + 4e-6).epsilon(1e-3));
  // Backward: five products, 2.5 x the FLOPs.
  plan::KernelList::Attention b = a;
  b.backward = true;
  CHECK(b.flops() == 2.5 * a.flops());
}

TEST_CASE("a kernel list takes at least its launches times the host's work per kernel", "[compute]") {
  // Three memory-bound kernels of 9 MB: 10 us each at 900 GB/s, plus a 4 us
  // launch: 42 us on the GPU. At 20 us of host work each the host needs
  // 60 us; at 10 us, 30, and the GPU's 42 stand.
  const DeviceModel d = v100();
  plan::KernelList k;
  k.memory_bytes.assign(3, Bytes(9'000'000));
  CHECK(d.kernels_time(k).seconds() == Approx(42e-6));
  k.host_per_kernel = Time::us(20);
  CHECK(d.kernels_time(k) == Time::us(60));
  k.host_per_kernel = Time::us(10);
  CHECK(d.kernels_time(k).seconds() == Approx(42e-6));
}

TEST_CASE("an FP8 GEMM runs at the FP8 peak with one-byte operands, on GPUs that have it", "[compute]") {
  // H100: 1,979 TFLOP/s FP8, twice its 989 bf16 (the 3,958 of its
  // datasheet is with sparsity). A compute-bound 8192^3 GEMM in the same
  // tiles and waves takes half the bf16 time, launch aside.
  const DeviceModel h = *find_device_model("H100");
  REQUIRE(h.fp8_flops == 1979e12);
  plan::KernelList::Gemm g{8192, 8192, 8192, 1};
  const Time bf16 = h.gemm_time(g.m, g.n, g.k, plan::DType::bf16) - h.launch_overhead;
  g.fp8 = true;
  const Time fp8 = h.fp8_gemm_time(g) - h.launch_overhead;
  CHECK(fp8.seconds() == Approx(bf16.seconds() * 989 / 1979).epsilon(1e-6));
  plan::KernelList k;
  k.dtype = plan::DType::bf16;
  k.gemms = {g};
  CHECK(h.kernels_time(k) == fp8 + h.launch_overhead);
  // With an FP8 fraction of its own (a profile's fp8_efficiency) at half
  // the bf16 one, the FP8 GEMM takes as long as the bf16 one; the bf16
  // GEMM is unchanged.
  DeviceModel slow8 = h;
  slow8.compute_efficiency[static_cast<std::size_t>(plan::DTypeClass::fp16)] = 0.8;
  slow8.fp8_efficiency = 0.4;
  const Time bf16_at_08 = slow8.gemm_time(g.m, g.n, g.k, plan::DType::bf16) - h.launch_overhead;
  CHECK((slow8.fp8_gemm_time(g) - h.launch_overhead).seconds() ==
        Approx(bf16_at_08.seconds() * 989 / 1979 * 2).epsilon(1e-6));
  // The A100 has no FP8 tensor cores.
  CHECK_THROWS_AS(find_device_model("A100")->fp8_gemm_time(g), UsageError);
}
