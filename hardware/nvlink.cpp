#include "hardware/nvlink.h"

#include <array>

namespace meshsim::hardware {

namespace {

constexpr std::array kNvlinkGenerations{
    NvlinkGeneration{60, "NVLink 1", Bandwidth::GBps(20), 0.90},
    NvlinkGeneration{70, "NVLink 2", Bandwidth::GBps(25), 0.80},
    NvlinkGeneration{80, "NVLink 3", Bandwidth::GBps(25), 0.80},
    // GA102 (A40, RTX 3090) bridges: 4 links, 112.5 GB/s both directions.
    NvlinkGeneration{86, "NVLink 3 (GA102 bridge)", Bandwidth::bytes_per_second(14'062'500'000), 0.853},
    NvlinkGeneration{90, "NVLink 4", Bandwidth::GBps(25), 0.824},
    NvlinkGeneration{100, "NVLink 5", Bandwidth::GBps(50), 0.802},
};

}  // namespace

const NvlinkGeneration& nvlink_generation(int sm) {
  const NvlinkGeneration* best = &kNvlinkGenerations.front();
  for (const NvlinkGeneration& g : kNvlinkGenerations)
    if (g.min_sm <= sm) best = &g;
  return *best;
}

}  // namespace meshsim::hardware
