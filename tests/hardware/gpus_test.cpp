#include "hardware/gpus.h"

#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "hardware/nvlink.h"

using namespace meshsim;
using namespace meshsim::hardware;

TEST_CASE("every catalogue entry is named once and modelled entries are whole", "[hardware]") {
  std::set<std::string> names;
  for (const GpuSpec* g : gpus()) {
    INFO(g->name);
    CHECK(names.insert(std::string(g->name)).second);
    CHECK(!g->source.empty());
    CHECK(g->sm >= 60);
    if (!g->modelled()) continue;
    CHECK(g->peaks.fp32_flops > 0);
    CHECK(g->peaks.fp64_flops > 0);
    CHECK(g->peaks.int8_ops > 0);
    CHECK(g->memory.count() > 0);
    CHECK(g->memory_bandwidth.bps() > 0);
    CHECK(g->sms > 0);
    CHECK(g->nvlink_lanes > 0);
  }
  // The five GPUs with a compute model, in catalogue order.
  CHECK(modelled_gpu_names() == "V100, A100, A100-80GB, H100, H200, B200, GB200, B300");
  // Of them, the Hopper parts have FP8 tensor cores.
  CHECK(fp8_gpu_names() == "H100, H200, B200, GB200, B300");
}

TEST_CASE("the catalogue's figures are the datasheets'", "[hardware]") {
  // H100 SXM5: 989 TFLOP/s dense FP16 on the tensor cores, 3.35 TB/s HBM3,
  // 132 SMs, 18 NVLink 4 links; compute capability 9.0.
  const GpuSpec& h = *find_gpu("H100");
  CHECK(h.peaks.fp16_flops == 989e12);
  CHECK(h.memory_bandwidth == Bandwidth::GBps(3350));
  CHECK(h.sms == 132);
  CHECK(h.nvlink_lanes == 18);
  CHECK(h.sm == 90);
  CHECK(h.nccl_arch == NcclArch::hopper);
  // The A100 80 GB differs from the 40 GB part only in its memory.
  const GpuSpec& a40 = kA100;
  const GpuSpec& a80 = kA100_80GB;
  CHECK(a80.peaks.fp16_flops == a40.peaks.fp16_flops);
  CHECK(a80.memory == Bytes::GiB(80));
  CHECK(a80.memory_bandwidth == Bandwidth::GBps(2039));
  // NCCL's tables know GPUs meshsim cannot time yet: no peaks, an architecture row.
  const GpuSpec& b = *find_gpu("B100");
  CHECK(!b.modelled());
  CHECK(b.nccl_arch == NcclArch::blackwell);
  CHECK(find_gpu("T4") == nullptr);
}

TEST_CASE("the driver's device names and NCCL's compute capabilities map to catalogue models", "[hardware]") {
  // The entry holding the most of its driver names wins: A100-80GB ("A100"
  // and "80GB") over A100 ("A100").
  CHECK(gpu_for_device_name("NVIDIA A100-SXM4-80GB")->name == "A100-80GB");
  CHECK(gpu_for_device_name("NVIDIA A100-SXM4-40GB")->name == "A100");
  CHECK(gpu_for_device_name("Tesla V100-SXM2-16GB")->name == "V100");
  CHECK(gpu_for_device_name("NVIDIA H100 80GB HBM3")->name == "H100");
  // A GB200's name holds "B200" too: the GB200 holds both of its names.
  CHECK(gpu_for_device_name("NVIDIA GB200")->name == "GB200");
  CHECK(gpu_for_device_name("NVIDIA B200")->name == "B200");
  CHECK(gpu_for_device_name("NVIDIA H200")->name == "H200");
  CHECK(gpu_for_device_name("NVIDIA GeForce RTX 4090") == nullptr);
  // An NCCL dump's sm stands for one model: 90 is H100 (H200 shares it).
  CHECK(gpu_for_sm(70)->name == "V100");
  CHECK(gpu_for_sm(80)->name == "A100");
  CHECK(gpu_for_sm(90)->name == "H100");
  CHECK(gpu_for_sm(86) == nullptr);
  CHECK(gpu_for_sm(100) == nullptr);
}

TEST_CASE("add_gpu registers a model every lookup then finds", "[hardware]") {
  GpuSpec x;
  x.name = "X-test-1";
  x.sm = 120;
  x.nccl_arch = NcclArch::blackwell;
  x.peaks = {100e12, 2000e12, 50e12, 4000e12};
  x.memory = Bytes::GiB(192);
  x.memory_bandwidth = Bandwidth::GBps(8000);
  x.sms = 160;
  x.nvlink_lanes = 18;
  x.sm_default = true;
  std::string driver = "X-test-1 SXM";  // the entry copies its strings: this one may change after
  x.driver_names = {std::string_view(driver).substr(0, 8), {}};
  x.source = "a test";
  const GpuSpec& added = add_gpu(x);
  driver = "overwritten";
  CHECK(find_gpu("X-test-1") == &added);
  CHECK(gpu_for_device_name("NVIDIA X-test-1 SXM")->name == "X-test-1");
  CHECK(gpu_for_sm(120)->name == "X-test-1");
  CHECK(gpus().back() == &added);
  CHECK(modelled_gpu_names() == "V100, A100, A100-80GB, H100, H200, B200, GB200, B300, X-test-1");
  // A name is taken once.
  CHECK_THROWS_AS(add_gpu(x), UsageError);
  x.name = "H100";
  CHECK_THROWS_AS(add_gpu(x), UsageError);
  x.name = "";
  CHECK_THROWS_AS(add_gpu(x), UsageError);
}

TEST_CASE("NVLink generations reproduce NCCL's link model", "[hardware]") {
  // Per lane, per direction: 25 GB/s for V100, A100 and H100; NCCL models
  // 20, 20 and 20.6 GB/s. The row is the largest sm <= the GPU's.
  CHECK(nvlink_generation(70).lane == Bandwidth::GBps(25));
  CHECK(nvlink_generation(70).lane.scaled(nvlink_generation(70).efficiency) == Bandwidth::GBps(20));
  CHECK(nvlink_generation(80).lane.scaled(nvlink_generation(80).efficiency) == Bandwidth::GBps(20));
  CHECK(nvlink_generation(90).lane.scaled(nvlink_generation(90).efficiency) ==
        Bandwidth::bytes_per_second(20'600'000'000));
  CHECK(nvlink_generation(89).min_sm == 86);
  CHECK(nvlink_generation(120).min_sm == 100);
  CHECK(nvlink_generation(50).min_sm == 60);
  // A catalogue model's generation is its sm's: the H200 is NVLink 4.
  CHECK(nvlink_generation(kH200.sm).name == "NVLink 4");
}
