#pragma once
// Shared by the tests that build training steps by hand (tests/pipeline,
// tests/search): one DGX A100 host, the small GPT and the small Llama their
// hand-derived figures are worked out on.

#include "model/model.h"
#include "topology/cluster.h"

namespace meshsim::pipeline::testing {

inline topology::Topology one_dgx_a100() {
  topology::ClusterSpec spec;
  spec.host_preset = "dgx-a100";
  spec.hosts = 1;
  return topology::build_cluster(spec);
}

// h = 64, a = 4, s = 32, V = 128, 4 layers, f16: layers 0 (embedding,
// 10,240 parameters), 1-4 (transformer, 49,984 each), 5 (head, tied to the
// embedding: none). Split over two stages: stage 0 = [embedding, l0, l1],
// 110,208 parameters; stage 1 = [l2, l3, head], 99,968.
inline const model::Model& tiny_gpt() {
  static const model::Model m = model::gpt_model("tiny", 4, 64, 4, 32, 128);
  return m;
}

// A small Llama of `layers` layers and `sequence` tokens: h = 64, a = 4,
// g = 2 key/value heads (d = 16, g·d = 32), f = 128, V = 128.
inline model::TransformerSpec small_llama(std::int64_t layers, std::int64_t sequence) {
  model::TransformerSpec spec;
  spec.family = model::Family::llama;
  spec.layers = layers;
  spec.hidden = 64;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.ffn_hidden = 128;
  spec.sequence = sequence;
  spec.vocabulary = 128;
  return spec;
}

}  // namespace meshsim::pipeline::testing
