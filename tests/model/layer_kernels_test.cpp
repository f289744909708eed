#include "model/layer_kernels.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::model;

TEST_CASE("a GPT layer's kernels do the FLOPs of the textbook count", "[layer-kernels]") {
  // h 2048, 16 heads, tp 2; 2 sequences of 64 new tokens after 128 cached:
  // forward 24·T·h²/t + 4·b·l·(c + l)·h/t with T = 128, backward twice that.
  const LayerShape s{2048, 16, 2, 64, 128, 2, plan::DType::f16};
  const double T = 128;
  const double expected = 24 * T * 2048 * 2048 / 2 + 4 * 2 * 64 * (128 + 64) * 2048 / 2.0;
  const plan::KernelList forward = layer_forward(s);
  const plan::KernelList backward = layer_backward(forward);
  CHECK(forward.flops() == Approx(expected));
  CHECK(backward.flops() == Approx(2 * expected));
  CHECK(backward.bytes() == forward.bytes() * 2);
  CHECK(forward.gemms.size() == 6);
  CHECK(backward.gemms.size() == 12);
  CHECK(backward.memory_bytes.size() == 6);
}

TEST_CASE("a context rank's share: s/cp tokens whose queries see half the sequence's keys",
          "[layer-kernels]") {
  // s = 1,024 over cp = 4: 256 tokens per rank after c = 256·3/2 = 384, so
  // fused attention's keys per query are 384 + 128 = 512 = s/2, and the 4
  // ranks' attention products add up to the whole sequence's.
  LayerShape whole{2048, 16, 1, 1024, 0, 2, plan::DType::bf16};
  whole.fused_attention = true;
  const LayerShape shard = context_shard(whole, 4);
  CHECK(shard.tokens == 256);
  CHECK(shard.context == 384);
  const plan::KernelList w = layer_forward(whole);
  const plan::KernelList r = layer_forward(shard);
  REQUIRE(r.attention.size() == 1);
  CHECK(r.attention[0] == plan::KernelList::Attention{8, 256, 512, 128, false});
  CHECK(4 * r.flops() == Approx(w.flops()));
  CHECK(context_shard(whole, 1).tokens == 1024);
  CHECK_THROWS_AS(context_shard(whole, 0), UsageError);
}

TEST_CASE("gradient accumulation reads and writes the layer's parameters on one tensor rank",
          "[layer-kernels]") {
  // h 1024, tp 2, fp16: (12·1024² + 13·1024) / 2 = 6,298,112 parameters;
  // read the sum, read the new gradient, write the sum: 3 × 2 bytes each.
  const LayerShape s{1024, 16, 4, 64, 512, 2, plan::DType::f16};
  const plan::KernelList k = gpt_layer_grad_accumulation(s);
  CHECK(k.gemms.empty());
  REQUIRE(k.memory_bytes.size() == 1);
  CHECK(k.memory_bytes[0] == Bytes(37788672));
  // The tokens of the pass do not matter: it is the parameters that move.
  LayerShape other = s;
  other.sequences = 1;
  other.tokens = 2048;
  other.context = 0;
  CHECK(gpt_layer_grad_accumulation(other) == k);
}

TEST_CASE("a thin slice costs a layer more than its FLOPs at the peak", "[layer-kernels]") {
  // GPT-3 1B's layer (h 2048) on a V100 at its peak: 64 tokens fill at most
  // 48 of the 80 SMs and read every weight, so the kernels take far longer
  // than the FLOPs alone at 125 TFLOP/s; and one slice of 64 tokens costs
  // more than an eighth of a 512-token one.
  sim::DeviceModel d = *sim::find_device_model("V100");
  d.compute_efficiency.fill(1.0);
  auto seconds = [&](double tokens) {
    const LayerShape s{2048, 16, 1, tokens, 0, 1, plan::DType::f16};
    return d.kernels_time(layer_forward(s)).seconds();
  };
  const double flops_at_peak = 24 * 64 * 2048.0 * 2048 / 125e12;
  CHECK(seconds(64) > 3 * flops_at_peak);
  CHECK(seconds(64) > seconds(512) / 8);
  CHECK(seconds(512) > seconds(64));
}

TEST_CASE("calibrate --layers measures each layer shape's forward and backward GEMMs", "[layer-kernels]") {
  // GPT-3 1B (h 2048, 16 heads, 2048 tokens): tp {1, 2} x microbatches
  // {1, 4} gives 4 shapes, each a forward list and its backward.
  const Model m = gpt_model("1b", 24, 2048, 16, 2048, 50257);
  const auto lists = gpt_layer_kernel_lists(m, {1, 2}, {1, 4});
  REQUIRE(lists.size() == 8);
  // tp 2, microbatch 4: T = 8192 tokens, the QKV GEMM 8192 x 3h/2 x h.
  const LayerShape s{2048, 16, 4, 2048, 0, 2, plan::DType::f16};
  CHECK(lists[6] == layer_forward(s));
  CHECK(lists[7] == layer_backward(lists[6]));
  CHECK(lists[6].gemms[0] == plan::KernelList::Gemm{8192, 3072, 2048, 1});
  CHECK_THROWS_AS(gpt_layer_kernel_lists(m, {3}, {1}), UsageError);  // 3 does not divide 16 heads
  CHECK_THROWS_AS(gpt_layer_kernel_lists(m, {1}, {0}), UsageError);
  Model layers_only = m;
  layers_only.hidden = 0;
  CHECK_THROWS_AS(gpt_layer_kernel_lists(layers_only, {1}, {1}), UsageError);
}

TEST_CASE("a slice's cache copies: the whole cache in every backward, the sum skipped on the last slice",
          "[layer-kernels]") {
  // One sequence, h 1024, tp 2, f16: 1,024 bytes per token of keys (and of
  // values). 64 tokens after 128, caches of 512: per tensor 2·64 + 512 +
  // 2·192 + 3·512 + 2·512 + 64 = 3,648 tokens, 3,735,552 bytes; twice that
  // for keys and values, in 12 kernels.
  const LayerShape s{1024, 16, 1, 64, 128, 2, plan::DType::f16};
  const plan::KernelList k = kv_cache_kernels(s, 512);
  CHECK(k.gemms.empty());
  CHECK(k.memory_bytes.size() == 12);
  CHECK(k.bytes() == Bytes(7471104));
  // The last slice (448 + 64 = 512) has no later gradient to add.
  const LayerShape last{1024, 16, 1, 64, 448, 2, plan::DType::f16};
  const plan::KernelList l = kv_cache_kernels(last, 512);
  CHECK(l.memory_bytes.size() == 10);
  CHECK(l.bytes() == Bytes(2 * 1024 * (128 + 512 + 1024 + 1024 + 64)));
}

TEST_CASE("TeraPipe's attention extras: the mask, the fp32 softmax and two copies", "[layer-kernels]") {
  // h 1024, 16 heads, t 2, b 1, a slice of l = 64 after c = 128, f16:
  //   scores E = 1 * 8 * 64 * 192 = 98,304; queries and output 64 * 512 = 32,768 elements
  //   forward: scaling 2 * 32,768 * 2 B = 131,072; mask (5*64^2 + 3*64*128) * 2 B = 90,112;
  //            mask add 2 * E * 2 B = 393,216; fp32 softmax and cast 8 * E = 786,432;
  //            contiguous 131,072
  //   backward: twice the scaling, the softmax cast and the copy: 262,144 + 1,572,864 + 262,144
  //   total 3,629,056 bytes in 8 kernels.
  const LayerShape s{1024, 16, 1, 64, 128, 2, plan::DType::f16};
  const plan::KernelList k = terapipe_attention_kernels(s);
  CHECK(k.gemms.empty());
  CHECK(k.memory_bytes.size() == 8);
  CHECK(k.bytes() == Bytes(3629056));
  // An fp32 layer's softmax is already fp32: no cast.
  const LayerShape f32{1024, 16, 1, 64, 128, 2, plan::DType::f32};
  CHECK(terapipe_attention_kernels(f32).memory_bytes.size() == 6);
}

TEST_CASE("a TeraPipe layer's forward pass launches 19 kernels in fp16, 18 in fp32", "[layer-kernels]") {
  // Megatron's forward: 6 GEMMs (QKV, scores, values, projection, two MLP)
  // and 6 memory-bound kernels (two layer norms, softmax, two bias-dropout-
  // residuals, GeLU); the two cache writes; TeraPipe's attention forward:
  // scaling, mask, mask add, the fp32 softmax's cast (fp16 only), copy.
  CHECK(terapipe_forward_kernel_count({2048, 16, 1, 256, 0, 1, plan::DType::f16}) == 19);
  CHECK(terapipe_forward_kernel_count({2048, 16, 1, 256, 0, 1, plan::DType::f32}) == 18);
  // The forward and backward parts of the cache and attention lists make up the whole lists.
  const LayerShape slice{2048, 16, 1, 64, 128, 2, plan::DType::f16};
  CHECK(kv_cache_kernels(slice, 2048, KernelPasses::forward).memory_bytes.size() == 2);
  CHECK(kv_cache_kernels(slice, 2048, KernelPasses::backward).memory_bytes.size() == 10);
  CHECK(kv_cache_kernels(slice, 2048).memory_bytes.size() == 12);
  CHECK(terapipe_attention_kernels(slice, KernelPasses::forward).bytes() +
            terapipe_attention_kernels(slice, KernelPasses::backward).bytes() ==
        terapipe_attention_kernels(slice).bytes());
  // Neither the context nor the tensor-parallel degree changes the count.
  CHECK(terapipe_forward_kernel_count({6144, 48, 2, 64, 512, 8, plan::DType::f16}) == 19);
}
