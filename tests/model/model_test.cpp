#include "model/model.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using namespace meshsim;
using namespace meshsim::model;

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
  CHECK(activation_bytes(m, l, {.tp = 2}) == 25'088);
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

namespace {
// Two f32 layers; layer 0 lists its kernels per sample: a 3 x 3 convolution
// over 16 x 16 pixels, 8 to 4 channels (GEMM 256 x 4 x 72), attention
// scores over 2 heads (GEMM 256 x 256 x 2, batch 2, rows fixed), one
// memory-bound kernel and an all-reduce of 1,024 elements; it also makes a
// side output of 8 x 8 x 4 read by layer 1.
constexpr const char* kListed =
    R"({"format": "meshsim.model/1", "name": "k", "kind": "layers", "dtype": "f32",
  "layers": [
    {"name": "a", "params": "1KiB", "activation": "4KiB", "output_shape": [16, 16, 4],
     "side_outputs": [{"shape": [8, 8, 4], "to": [1]}],
     "kernels": {"gemms": [{"m": 256, "n": 4, "k": 72},
                           {"m": 256, "n": 256, "k": 2, "batch": 2, "grows": "batch", "weights": false}],
                 "memory": ["8KiB"], "allreduces": [1024]}},
    {"name": "b", "params": "1KiB", "activation": "4KiB", "output_shape": [4], "tp_allreduces": 1,
     "kernels": {"memory": ["64B"]}}]})";

std::string error_path(const std::string& text) {
  try {
    (void)model_from_json(Json::parse(text), "m.json");
  } catch (const ConfigError& e) {
    return e.json_path();
  }
  return "accepted";
}

std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}
}  // namespace

TEST_CASE("a layer's kernel list gives its FLOPs and all-reduces", "[model]") {
  // FLOPs: 2*256*4*72 + 2*256*256*2*2 = 147,456 + 524,288 = 671,744.
  // All-reduce: 1,024 elements * 4 B = 4,096 B; layer b: one of its output, 4 * 4 B.
  const Model m = model_from_json(Json::parse(kListed), "k.json");
  REQUIRE(m.layers.size() == 2);
  CHECK(m.layers[0].forward_flops == 671'744);
  CHECK(tp_allreduce_bytes(m, m.layers[0]) == 4096);
  CHECK(tp_allreduce_bytes(m, m.layers[1]) == 16);
  REQUIRE(m.layers[0].kernels);
  CHECK(m.layers[0].kernels->gemms[1].batch_grows);
  CHECK_FALSE(m.layers[0].kernels->gemms[1].weights);
  CHECK(m.layers[0].kernels->gemms[0].weights);
  CHECK(m.layers[0].kernels->memory_bytes == std::vector<double>{8192});
  REQUIRE(m.layers[0].side_outputs.size() == 1);
  CHECK(m.layers[0].side_outputs[0].to == std::vector<int>{1});
  CHECK(has_kernel_lists(m));
}

TEST_CASE("kernel lists: mistakes name their path", "[model]") {
  const std::string ok = kListed;
  CHECK(error_path(ok) == "accepted");
  CHECK(error_path(with(ok, R"("name": "a", )", R"("name": "a", "forward_flops": 1, )")) ==
        "layers[0].forward_flops");
  CHECK(error_path(with(ok, R"("grows": "batch")", R"("grows": "n")")) == "layers[0].kernels.gemms[1].grows");
  CHECK(error_path(with(ok, R"("m": 256, "n": 4)", R"("m": 0, "n": 4)")) == "layers[0].kernels.gemms[0].m");
  CHECK(error_path(with(ok, R"("to": [1])", R"("to": [0])")) == "layers[0].side_outputs[0].to[0]");
  CHECK(error_path(with(ok, R"("tp_allreduces": 1,)",
                        R"("tp_allreduces": 1, "side_outputs": [{"shape": [4], "to": []}],)")) ==
        "layers[1].side_outputs[0].to");  // no reader
  CHECK(error_path(with(ok, R"("kernels": {"memory": ["64B"]})", R"("forward_flops": 0)")) == "layers[1]");
  CHECK(error_path(with(ok, R"("memory": ["64B"])", R"("allreduces": [4])")) == "layers[1].kernels");
}
