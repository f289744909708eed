#pragma once
// The catalogue of GPU models: each model once (the fields: hardware/gpu.h),
// read by every layer. Adding a GPU is one entry in kBuiltinGpus (add_gpu
// registers one at run time, as tests do).
//
// Peaks are the
// vendors' dense figures of the SXM parts, FP16 on the tensor cores:
//   V100 SXM2  Tesla V100 datasheet: 15.7 FP32, 125 FP16 tensor, 7.8 FP64
//              TFLOP/s; INT8 by DP4A, 4 × FP32 = 62.8 TOPS; 900 GB/s HBM2;
//              16 GB as AWS p3 has it; 80 SMs, 6 NVLink 2 links (Volta
//              whitepaper)
//   A100 SXM   A100 datasheet: 19.5 FP32, 312 FP16, 9.7 FP64, 624 INT8;
//              40 GB HBM2 at 1,555 GB/s, 80 GB HBM2e at 2,039 GB/s; 108 SMs,
//              12 NVLink 3 links (Ampere whitepaper)
//   H100 SXM5  H100 datasheet: 67 FP32, 989 FP16, 34 FP64, 1,979 INT8,
//              1,979 FP8 (the datasheet's 3,958 is with sparsity);
//              80 GB HBM3 at 3.35 TB/s; 132 SMs, 18 NVLink 4 links (Hopper
//              whitepaper)
//   H200 SXM   H200 datasheet: H100's compute; 141 GB HBM3e at 4.8 TB/s
//   B200       HGX B200 datasheet (1,000 W): 2,250 FP16/BF16 and 4,500 FP8
//              and INT8 dense (twice that with sparsity), 75 FP32, 37 FP64;
//              180 GB HBM3e usable at 8 TB/s; 148 SMs (not on the
//              datasheet: what CUDA reports), 18 NVLink 5 links
// Board power (TDP, the most the board draws): V100 SXM2 300 W, A100 SXM
// 400 W (both memory sizes), H100 SXM5 and H200 SXM up to 700 W (their
// datasheets), B200 1,000 W (HGX B200 datasheet), GB200's B200 1,200 W.
// V100 and A100 have no FP8 tensor cores.
// The parts after them carry only what NCCL's tuning model knows of them
// (their architecture row, src/graph/tuning.cc): meshsim has no compute
// model for them yet.

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/gpu.h"

namespace meshsim::hardware {

inline constexpr std::array kBuiltinGpus{
    GpuSpec{.name = "V100",
            .sm = 70,
            .nccl_arch = NcclArch::volta,
            .peaks = {.fp32_flops = 15.7e12, .fp16_flops = 125e12, .fp64_flops = 7.8e12, .int8_ops = 62.8e12},
            .memory_bandwidth = Bandwidth::GBps(900),
            .memory = Bytes::GiB(16),
            .sms = 80,
            .nvlink_lanes = 6,
            .sm_default = true,
            .board_watts = 300,
            .driver_names = {"V100", {}},
            .source = "NVIDIA Tesla V100 datasheet, Volta whitepaper"},
    GpuSpec{.name = "A100",
            .sm = 80,
            .nccl_arch = NcclArch::ampere,
            .peaks = {.fp32_flops = 19.5e12, .fp16_flops = 312e12, .fp64_flops = 9.7e12, .int8_ops = 624e12},
            .memory_bandwidth = Bandwidth::GBps(1555),
            .memory = Bytes::GiB(40),
            .sms = 108,
            .nvlink_lanes = 12,
            .sm_default = true,
            .board_watts = 400,
            .driver_names = {"A100", {}},
            .source = "NVIDIA A100 datasheet, Ampere whitepaper"},
    GpuSpec{.name = "A100-80GB",
            .sm = 80,
            .nccl_arch = NcclArch::ampere,
            .peaks = {.fp32_flops = 19.5e12, .fp16_flops = 312e12, .fp64_flops = 9.7e12, .int8_ops = 624e12},
            .memory_bandwidth = Bandwidth::GBps(2039),
            .memory = Bytes::GiB(80),
            .sms = 108,
            .nvlink_lanes = 12,
            .board_watts = 400,
            .driver_names = {"A100", "80GB"},
            .source = "NVIDIA A100 datasheet, Ampere whitepaper"},
    GpuSpec{.name = "H100",
            .sm = 90,
            .nccl_arch = NcclArch::hopper,
            .peaks = {.fp32_flops = 67e12,
                      .fp16_flops = 989e12,
                      .fp64_flops = 34e12,
                      .int8_ops = 1979e12,
                      .fp8_flops = 1979e12},
            .memory_bandwidth = Bandwidth::GBps(3350),
            .memory = Bytes::GiB(80),
            .sms = 132,
            .nvlink_lanes = 18,
            .sm_default = true,
            .board_watts = 700,
            .driver_names = {"H100", {}},
            .source = "NVIDIA H100 datasheet, Hopper whitepaper"},
    GpuSpec{.name = "H200",
            .sm = 90,
            .nccl_arch = NcclArch::hopper,
            .peaks = {.fp32_flops = 67e12,
                      .fp16_flops = 989e12,
                      .fp64_flops = 34e12,
                      .int8_ops = 1979e12,
                      .fp8_flops = 1979e12},
            .memory_bandwidth = Bandwidth::GBps(4800),
            .memory = Bytes(INT64_C(141000000000)),
            .sms = 132,
            .nvlink_lanes = 18,
            .board_watts = 700,
            .driver_names = {"H200", {}},
            .source = "NVIDIA H200 datasheet"},
    GpuSpec{.name = "B200",
            .sm = 100,
            .nccl_arch = NcclArch::blackwell,
            .peaks = {.fp32_flops = 75e12,
                      .fp16_flops = 2250e12,
                      .fp64_flops = 37e12,
                      .int8_ops = 4500e12,
                      .fp8_flops = 4500e12},
            .memory_bandwidth = Bandwidth::GBps(8000),
            .memory = Bytes(INT64_C(180000000000)),
            .sms = 148,
            .nvlink_lanes = 18,
            .board_watts = 1000,
            .driver_names = {"B200", {}},
            .source = "NVIDIA HGX B200 datasheet; 148 SMs as CUDA reports them"},
    // The B200 of a GB200 superchip (1,200 W, beside a Grace CPU): the
    // GB200 NVL72 datasheet's rack figures over its 72 GPUs, sparsity
    // halved; no FP32 (non-tensor) or SM count is published for it, so
    // those are the HGX B200's (the same die).
    GpuSpec{.name = "GB200",
            .sm = 100,
            .nccl_arch = NcclArch::blackwell,
            .peaks = {.fp32_flops = 75e12,
                      .fp16_flops = 2500e12,
                      .fp64_flops = 45e12,
                      .int8_ops = 5000e12,
                      .fp8_flops = 5000e12},
            .memory_bandwidth = Bandwidth::GBps(8000),
            .memory = Bytes(INT64_C(186000000000)),
            .sms = 148,
            .nvlink_lanes = 18,
            .board_watts = 1200,
            .driver_names = {"GB200", "B200"},
            .source =
                "NVIDIA GB200 NVL72 datasheet (per GPU: 360 PF sparse bf16, 720 PF sparse fp8, 3,240 TF "
                "fp64, 13.4 TB at 576 TB/s, over 72); FP32 and SMs the HGX B200's"},
    // Blackwell Ultra, as in HGX and DGX B300: NVIDIA's HGX B300 figures
    // (as G. Lockwood's processor notes tabulate them): 2,250 FP16/BF16,
    // 4,500 FP8 and INT8 dense, 75 FP32, 1.25 FP64; 288 GB HBM3e at 8 TB/s;
    // compute capability 10.3. The full die has 160 SMs (NVIDIA's
    // "Inside NVIDIA Blackwell Ultra"); the shipping part's count is not
    // published, so the B200's 148 enabled of the same 160 stand in. No
    // board power was at hand.
    GpuSpec{
        .name = "B300",
        .sm = 103,
        .nccl_arch = NcclArch::blackwell,
        .peaks = {.fp32_flops = 75e12,
                  .fp16_flops = 2250e12,
                  .fp64_flops = 1.25e12,
                  .int8_ops = 4500e12,
                  .fp8_flops = 4500e12},
        .memory_bandwidth = Bandwidth::GBps(8000),
        .memory = Bytes(INT64_C(288000000000)),
        .sms = 148,
        .nvlink_lanes = 18,
        .driver_names = {"B300", {}},
        .source =
            "NVIDIA HGX B300 figures (via G. Lockwood's notes); 160-SM die (NVIDIA blog), 148 as the B200"},
    // NCCL's architecture rows alone (src/graph/tuning.cc):
    GpuSpec{.name = "A800", .sm = 80, .nccl_arch = NcclArch::ampere, .source = "NCCL tuning.cc"},
    GpuSpec{.name = "H800", .sm = 90, .nccl_arch = NcclArch::hopper, .source = "NCCL tuning.cc"},
    GpuSpec{.name = "H20", .sm = 90, .nccl_arch = NcclArch::hopper, .source = "NCCL tuning.cc"},
    GpuSpec{.name = "GH200", .sm = 90, .nccl_arch = NcclArch::hopper, .source = "NCCL tuning.cc"},
    GpuSpec{.name = "B100", .sm = 100, .nccl_arch = NcclArch::blackwell, .source = "NCCL tuning.cc"},
};

/// The built-in model called `name`, at compile time: what host presets name
/// their GPUs by, so a name the catalogue lacks does not compile.
[[nodiscard]] consteval const GpuSpec& builtin_gpu(std::string_view name) {
  for (const GpuSpec& g : kBuiltinGpus)
    if (g.name == name) return g;
  throw "no such GPU in the catalogue";  // not a constant expression: a compile error
}

/// Every model: the built-in entries in catalogue order (hardware/gpus.h),
/// then those add_gpu registered, in the order they came. Entries never
/// move: the pointers stay valid.
[[nodiscard]] std::vector<const GpuSpec*> gpus();

/// The model called `name`; nullptr when the catalogue has none.
[[nodiscard]] const GpuSpec* find_gpu(std::string_view name);

/// The model whose driver_names the CUDA device name `device` all holds,
/// the one with the most of them first (A100-80GB before A100), then in
/// catalogue order; nullptr for none.
[[nodiscard]] const GpuSpec* gpu_for_device_name(std::string_view device);

/// The model an NCCL topology dump's compute capability stands for (the
/// sm_default entry of that sm); nullptr for none.
[[nodiscard]] const GpuSpec* gpu_for_sm(int sm);

/// The modelled GPUs' names, comma-separated, for messages ("V100, A100, ...").
[[nodiscard]] std::string modelled_gpu_names();
/// The GPUs with FP8 tensor cores (Peaks::fp8_flops), in catalogue order, comma-separated.
[[nodiscard]] std::string fp8_gpu_names();
/// Each compute capability an NCCL dump's "sm" names a model by, and that
/// model, for messages ("70 V100, 80 A100, 90 H100").
[[nodiscard]] std::string sm_default_names();

/// Registers a model the built-in catalogue lacks (a test's, or a newer
/// part's), copying its strings; returns the catalogue's entry. UsageError
/// when the name is empty or taken. Safe beside lookups in other threads.
const GpuSpec& add_gpu(const GpuSpec& spec);

// The models host presets are built of.
inline constexpr const GpuSpec& kV100 = builtin_gpu("V100");
inline constexpr const GpuSpec& kA100 = builtin_gpu("A100");
inline constexpr const GpuSpec& kA100_80GB = builtin_gpu("A100-80GB");
inline constexpr const GpuSpec& kH100 = builtin_gpu("H100");
inline constexpr const GpuSpec& kH200 = builtin_gpu("H200");
inline constexpr const GpuSpec& kB200 = builtin_gpu("B200");
inline constexpr const GpuSpec& kGB200 = builtin_gpu("GB200");
inline constexpr const GpuSpec& kB300 = builtin_gpu("B300");

}  // namespace meshsim::hardware
