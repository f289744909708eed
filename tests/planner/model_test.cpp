#include "planner/model.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::planner;

TEST_CASE("GPT layer costs follow the Megatron formulas on a small model", "[model]") {
  // h = 64, a = 4, s = 16, V = 100, f16 (2 bytes):
  //   layer forward FLOPs 24*16*64^2 + 4*16^2*64 = 1,572,864 + 65,536 = 1,638,400
  //   layer parameters (12*64^2 + 13*64) * 2 B = 49,984 * 2 = 99,968 B
  //   stored activations 16*64*(34 + 5*4*16/64) = 1024 * 39 = 39,936 B
  //   at t = 2: 1024 * (10 + 24/2 + 5*4*16/(64*2)) = 1024 * 24.5 = 25,088 B
  //   LM head forward FLOPs 2*16*64*100 = 204,800; embedding (100+16)*64*2 B
  const Model m = gpt_model("tiny", 2, 64, 4, 16, 100);
  REQUIRE(m.layers.size() == 4);
  const LayerCost& l = m.layers[1];
  CHECK(l.forward_flops == 1'638'400);
  CHECK(l.param_bytes == 99'968);
  CHECK(l.activation_bytes == 39'936);
  CHECK(activation_bytes(m, l, 2) == 25'088);
  CHECK(l.output_shape == std::vector<std::int64_t>{16, 64});
  CHECK(m.layers.back().forward_flops == 204'800);
  CHECK(m.layers.front().param_bytes == (100 + 16) * 64 * 2);
  CHECK(m.forward_flops() == 2 * 1'638'400 + 204'800);
}

TEST_CASE("the bundled GPT-3 configurations have the published parameter counts", "[model]") {
  // 12*L*h^2 dominates: 175B -> 174.6e9 + embeddings 0.6e9; 1.3B -> 1.32e9.
  const Model big = load_model_file(MESHSIM_SOURCE_DIR "/configs/models/gpt3-175b.json");
  CHECK(big.params() > 174e9);
  CHECK(big.params() < 176e9);
  const Model small = load_model_file(MESHSIM_SOURCE_DIR "/configs/models/gpt3-1.3b.json");
  CHECK(small.params() > 1.25e9);
  CHECK(small.params() < 1.40e9);
  for (const char* n : {"gpt3-2.6b", "gpt3-13b", "gpt3-39b", "gpt3-44b"})
    CHECK_NOTHROW(load_model_file(std::string(MESHSIM_SOURCE_DIR "/configs/models/") + n + ".json"));
}

TEST_CASE("model files: layer lists load, mistakes name their path", "[model]") {
  const Json layers =
      Json::parse(R"({"format": "meshsim.model/1", "name": "u", "kind": "layers", "dtype": "f16",
    "layers": [{"name": "down", "forward_flops": 1e9, "params": "4MiB", "activation": "1MiB", "output_shape": [64, 64, 32]},
               {"name": "up", "forward_flops": 2e9, "params": "8MiB", "activation": "2MiB", "output_shape": [128, 128, 16],
                "tp_allreduces": 2}]})");
  const Model m = model_from_json(layers, "u.json");
  CHECK(m.layers.size() == 2);
  CHECK(m.forward_flops() == 3e9);
  CHECK(m.param_bytes() == 12 * 1024 * 1024);
  auto path_of = [](const char* text) {
    try {
      (void)model_from_json(Json::parse(text), "m.json");
    } catch (const ConfigError& e) {
      return e.json_path();
    }
    return std::string("accepted");
  };
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "g", "kind": "gpt", "layers": 2, "hidden": 100,
                    "heads": 3, "sequence": 8, "vocabulary": 10})") == "heads");
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "g", "kind": "rnn"})") == "kind");
  CHECK(path_of(R"({"format": "meshsim.model/1", "name": "u", "kind": "layers", "layers": [{"name": "a",
                    "forward_flops": -1, "params": "1MiB", "activation": "1MiB", "output_shape": [4]}]})") ==
        "layers[0].forward_flops");
}
