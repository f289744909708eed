#include "model/transformer.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "model/layer_kernels.h"
#include "model/model.h"

using namespace meshsim;
using namespace meshsim::model;

namespace {

// A small Llama: h = 64, a = 4, g = 2 key/value heads (d = 16, g·d = 32),
// f = 96, s = 16, V = 100.
TransformerSpec small_llama() {
  TransformerSpec t;
  t.family = Family::llama;
  t.layers = 2;
  t.hidden = 64;
  t.heads = 4;
  t.kv_heads = 2;
  t.ffn_hidden = 96;
  t.sequence = 16;
  t.vocabulary = 100;
  return t;
}

// The same with experts on every other layer: E = 4, top 2, f_e = 32, and
// one shared expert of f_s = 48.
TransformerSpec small_moe() {
  TransformerSpec t = small_llama();
  t.moe = MoeSpec{4, 2, 32, 1, 48, 2, 0};
  return t;
}

double forward_flops_of(const plan::KernelList& k) {
  double f = 0;
  for (const auto& g : k.gemms) f += g.flops();
  return f;
}

}  // namespace

TEST_CASE("a GPT layer's parameters and FLOPs are Megatron's 12h² + 13h and 24sh² + 4s²h", "[model]") {
  TransformerSpec t = small_llama();  // h = 64, a = 4, s = 16, as a GPT
  t.family = Family::gpt;
  t.kv_heads = 4;
  t.ffn_hidden = 256;
  // 12·64² + 13·64 = 49,152 + 832 = 49,984;  24·16·64² + 4·16²·64 = 1,572,864 + 65,536.
  CHECK(layer_params(t, 0) == 49'984);
  CHECK(layer_forward_flops(t, 0) == 1'638'400);
}

TEST_CASE("a Llama layer: grouped-query attention, SwiGLU, RMSNorm, by hand", "[model]") {
  const TransformerSpec t = small_llama();
  // Parameters: Q, K, V 64·(64 + 2·32) = 8,192, output 64·64 = 4,096,
  // two RMSNorms 2·64 = 128, SwiGLU 3·64·96 = 18,432: 30,848.
  CHECK(layer_params(t, 0) == 30'848);
  // FLOPs: projections 2·16·64·128 + 2·16·64·64 = 262,144 + 131,072,
  // attention 4·16²·64 = 65,536, MLP 2·16·64·96·3 = 589,824: 1,048,576.
  CHECK(layer_forward_flops(t, 0) == 1'048'576);
  // The whole model: an embedding of 100·64 weights (rotary positions have
  // none) and an untied output layer of 100·64 + 64 (its RMSNorm), bf16.
  const Model m = transformer_model("small", t, plan::DType::bf16);
  REQUIRE(m.layers.size() == 4);
  CHECK(m.layers.front().param_bytes == 100 * 64 * 2);
  CHECK(m.layers.back().param_bytes == (100 * 64 + 64) * 2);
  CHECK(m.layers.back().forward_flops == 2 * 16 * 64 * 100);
  CHECK(m.params() == 2 * 30'848 + 100 * 64 + 100 * 64 + 64);
  // The kernels the pipeline times add up to the same FLOPs, at every tensor-parallel degree.
  for (int tp : {1, 2})
    CHECK(forward_flops_of(layer_forward(whole_sequences(m, 1, tp))) * tp ==
          Approx(1'048'576).epsilon(1e-12));
}

TEST_CASE("an MoE layer: router, top-k experts and a shared expert, by hand", "[model]") {
  const TransformerSpec t = small_moe();
  CHECK(t.is_moe_layer(0));
  CHECK_FALSE(t.is_moe_layer(1));
  // Parameters: attention and norms 12,416, router 64·4 = 256, experts
  // 4·3·64·32 = 24,576, the shared expert 3·64·48 = 9,216: 46,464.
  CHECK(layer_params(t, 0) == 46'464);
  CHECK(layer_params(t, 1) == 30'848);
  // FLOPs: attention 458,752, router 2·16·64·4 = 8,192, experts and shared
  // 2·16·64·3·(2·32 + 48) = 688,128: 1,155,072.
  CHECK(layer_forward_flops(t, 0) == 1'155'072);
  CHECK(layer_forward_flops(t, 1) == 1'048'576);
  const Model m = transformer_model("moe", t, plan::DType::bf16);
  CHECK(m.layers[1].moe);
  CHECK_FALSE(m.layers[2].moe);
  // Kernels: each expert sees 16·2/4 = 8 tokens, the four as one batched GEMM.
  const plan::KernelList k = layer_forward(whole_sequences(m, 1, 1, true));
  REQUIRE(k.gemms.size() == 9);
  CHECK(k.gemms[4] == plan::KernelList::Gemm{16, 4, 64, 1});  // router
  CHECK(k.gemms[5] == plan::KernelList::Gemm{8, 64, 64, 4});  // gate and up of 4 experts
  CHECK(k.gemms[6] == plan::KernelList::Gemm{8, 64, 32, 4});  // down
  CHECK(forward_flops_of(k) == 1'155'072);
}

TEST_CASE("the bundled Llama 3 and Mixtral files have their published parameter counts", "[model]") {
  // Published: 8.03B, 70.6B, 405B, 46.7B, 141B (by this file's formulas:
  // 8.030, 70.554, 405.853, 46.703, 140.621 billion).
  const std::pair<const char*, double> bundled[] = {{"llama3-8b", 8.030e9},
                                                    {"llama3-70b", 70.554e9},
                                                    {"llama3-405b", 405.853e9},
                                                    {"mixtral-8x7b", 46.703e9},
                                                    {"mixtral-8x22b", 140.621e9}};
  for (const auto& [name, params] : bundled) {
    const Model m = load_model_file(std::string(MESHSIM_SOURCE_DIR "/configs/models/") + name + ".json");
    INFO(name);
    CHECK(m.params() == Approx(params).epsilon(1e-4));
  }
}

TEST_CASE("model files: the llama kind and the moe block, mistakes name their path", "[model]") {
  auto path_of = [](const char* text) {
    try {
      (void)model_from_json(Json::parse(text), "m.json");
    } catch (const ConfigError& e) {
      return e.json_path().empty() ? std::string(e.what()) : e.json_path();
    }
    return std::string("accepted");
  };
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "l", "kind": "llama", "layers": 2, "hidden": 64,
                    "heads": 4, "kv_heads": 2, "ffn_hidden": 96, "sequence": 16, "vocabulary": 100})") ==
        "accepted");
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "l", "kind": "llama", "layers": 2, "hidden": 64,
                    "heads": 4, "sequence": 16, "vocabulary": 100})")
            .find("ffn_hidden") != std::string::npos);
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "l", "kind": "llama", "layers": 2, "hidden": 64,
                    "heads": 4, "kv_heads": 3, "ffn_hidden": 96, "sequence": 16, "vocabulary": 100})") ==
        "kv_heads");
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "l", "kind": "llama", "layers": 2, "hidden": 64,
                    "heads": 4, "ffn_hidden": 96, "sequence": 16, "vocabulary": 100,
                    "moe": {"experts": 4, "top_k": 5, "expert_ffn": 32}})") == "moe.top_k");
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "l", "kind": "llama", "layers": 2, "hidden": 64,
                    "heads": 4, "ffn_hidden": 96, "sequence": 16, "vocabulary": 100,
                    "moe": {"experts": 4, "top_k": 2, "expert_ffn": 32, "capacity_factor": 0.5}})") ==
        "moe.capacity_factor");
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "l", "kind": "mamba", "layers": 2})") == "kind");
  // A GPT file takes kv_heads too (multi-query GPTs).
  const Model g = model_from_json(Json::parse(R"({"format": "meshsim.model/1", "name": "g", "kind": "gpt",
      "layers": 1, "hidden": 64, "heads": 4, "kv_heads": 1, "sequence": 16, "vocabulary": 100})"),
                                  "g.json");
  CHECK(g.architecture->kv_heads == 1);
}
