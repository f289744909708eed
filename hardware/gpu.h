#pragma once
// What a GPU model is: every figure the other layers read about one.
//
//   name              what topology files, calibrations and outputs call it
//   sm                compute capability, major·10 + minor; picks the NVLink
//                     generation (hardware/nvlink.h)
//   nccl_arch         the row of NCCL's per-architecture tuning tables
//                     (plan/collective.h: tree channel limits, NVLink SHARP)
//   peaks             dense FLOP/s per dtype class, FP16 on the tensor cores;
//                     all zero: meshsim has no compute model for the GPU
//                     (sim/compute_model.h)
//   memory            HBM capacity and bandwidth; sms: streaming multiprocessors
//   nvlink_lanes      NVLink links per GPU (a host preset wires them)
//   sm_default        the model an NCCL topology dump's "sm" stands for when
//                     several share it (H200 is sm 90 like H100)
//   board_watts       the board's rated power (TDP) in watts; 0: unknown
//   driver_names      substrings the CUDA driver's device name holds, all of
//                     them ("A100" and "80GB"); none: never matched
//   source            where the figures come from
//
// The catalogue of them is hardware/gpus.h.

#include <array>
#include <cstdint>
#include <string_view>

#include "core/enum_names.h"
#include "core/units.h"

namespace meshsim::hardware {

/// The architectures NCCL's tuning tables have a row for.
enum class NcclArch : std::uint8_t { volta, ampere, hopper, blackwell };
inline constexpr std::size_t kNcclArchs = 4;
inline constexpr EnumNames<NcclArch, kNcclArchs> kNcclArchNames{"NCCL architecture",
                                                                {{{NcclArch::volta, "volta"},
                                                                  {NcclArch::ampere, "ampere"},
                                                                  {NcclArch::hopper, "hopper"},
                                                                  {NcclArch::blackwell, "blackwell"}}}};

struct Peaks {
  double fp32_flops = 0;
  double fp16_flops = 0;  // also bf16, on the tensor cores
  double fp64_flops = 0;
  double int8_ops = 0;
  double fp8_flops = 0;  // FP8 (E4M3/E5M2) on the tensor cores; 0: the part has none
};

struct GpuSpec {
  std::string_view name{};
  int sm = 0;
  NcclArch nccl_arch = NcclArch::volta;
  Peaks peaks{};
  Bandwidth memory_bandwidth{};
  Bytes memory{};
  int sms = 0;
  int nvlink_lanes = 0;
  bool sm_default = false;
  double board_watts = 0;
  std::array<std::string_view, 2> driver_names{};
  std::string_view source{};

  /// Whether meshsim can time compute on it (it has peaks).
  [[nodiscard]] constexpr bool modelled() const { return peaks.fp16_flops > 0; }
};

}  // namespace meshsim::hardware
