#include "model/layer_kernels.h"

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::model {

namespace {
Bytes bytes(double b) {
  return checked_bytes(b, "a layer's memory-bound kernels");
}
}  // namespace

LayerShape whole_sequences(const Model& m, int sequences, int tp, bool moe_layer, int ep,
                           double expert_skew) {
  LayerShape s{static_cast<double>(m.hidden),
               static_cast<double>(m.heads),
               static_cast<double>(sequences),
               static_cast<double>(m.sequence),
               0,
               static_cast<double>(tp),
               m.dtype};
  if (const auto& a = m.architecture) {
    s.kv_heads = static_cast<double>(a->kv_heads);
    s.ffn = static_cast<double>(a->ffn_hidden);
    s.gated = a->gated_mlp();
    if (moe_layer) s.moe = a->moe;
  }
  s.ep = ep;
  s.expert_skew = expert_skew;
  return s;
}

LayerShape context_shard(LayerShape s, int cp) {
  if (cp < 1) throw UsageError(fmt::format("the context-parallel degree must be at least 1, got {}", cp));
  s.tokens /= cp;
  s.context += s.tokens * (cp - 1) / 2;
  return s;
}

namespace {

// A dense MLP of hidden size `ffn` over `rows` tokens: its GEMMs and its activation's memory kernel.
void dense_mlp(plan::KernelList& k, const LayerShape& s, double rows, double ffn, double experts) {
  const double e = static_cast<double>(plan::dtype_size(s.dtype));
  const double f = ffn / s.tp;
  k.gemms.push_back({rows, (s.gated ? 2 : 1) * f, s.hidden, experts});
  k.memory_bytes.push_back(bytes((s.gated ? 3 : 2) * rows * experts * f * e));
  k.gemms.push_back({rows, s.hidden, f, experts});
}

void moe_mlp(plan::KernelList& k, const LayerShape& s, double T) {
  const MoeSpec& moe = *s.moe;
  const double e = static_cast<double>(plan::dtype_size(s.dtype));
  const double E = static_cast<double>(moe.experts);
  const double routed = T * static_cast<double>(moe.top_k);
  k.gemms.push_back({T, E, s.hidden, 1});
  k.memory_bytes.push_back(bytes(2 * T * E * e));
  k.memory_bytes.push_back(bytes(2 * routed * s.hidden * e));
  dense_mlp(k, s, s.expert_skew * s.ep * routed / E, static_cast<double>(moe.expert_ffn), E / s.ep);
  k.memory_bytes.push_back(bytes(2 * routed * s.hidden * e));
  if (moe.shared_experts > 0)
    dense_mlp(
        k, s, T,
        static_cast<double>(moe.shared_experts * (moe.shared_ffn > 0 ? moe.shared_ffn : moe.expert_ffn)), 1);
}

}  // namespace

plan::KernelList layer_forward(const LayerShape& s) {
  const double h = s.hidden;
  const double t = s.tp;
  const double T = s.sequences * s.tokens;
  const double kv = s.context + s.tokens;
  const double e = static_cast<double>(plan::dtype_size(s.dtype));
  const double heads = s.sequences * s.heads / t;  // independent attention products
  const double head_size = h / s.heads;
  const double kv_width = (s.kv_heads > 0 ? s.kv_heads : s.heads) * head_size;
  plan::KernelList k;
  k.dtype = s.dtype;
  k.gemms = {{T, (h + 2 * kv_width) / t, h, 1}};
  if (s.fused_attention) {  // per query, the keys a causal mask leaves: c + l/2
    k.attention = {{heads, s.tokens, s.context + s.tokens / 2, head_size, false}};
  } else {
    k.gemms.push_back({s.tokens, kv, head_size, heads});
    k.gemms.push_back({s.tokens, head_size, kv, heads});
  }
  k.gemms.push_back({T, h, h / t, 1});
  k.memory_bytes = {bytes(2 * T * h * e)};
  if (!s.fused_attention) k.memory_bytes.push_back(bytes(2 * heads * s.tokens * kv * e));
  k.memory_bytes.push_back(bytes(3 * T * h * e));
  k.memory_bytes.push_back(bytes(2 * T * h * e));
  if (s.moe)
    moe_mlp(k, s, T);
  else
    dense_mlp(k, s, T, s.ffn > 0 ? s.ffn : 4 * h, 1);
  k.memory_bytes.push_back(bytes(3 * T * h * e));
  return k;
}

plan::KernelList layer_backward(const plan::KernelList& f) {
  plan::KernelList b;
  b.dtype = f.dtype;
  for (const auto& g : f.gemms) {
    b.gemms.push_back({g.m, g.k, g.n, g.batch, g.fp8});  // input gradient
    b.gemms.push_back({g.k, g.n, g.m, g.batch, g.fp8});  // weight (or value) gradient
  }
  for (plan::KernelList::Attention a : f.attention) {
    a.backward = true;
    b.attention.push_back(a);
  }
  for (Bytes bytes : f.memory_bytes) b.memory_bytes.push_back(bytes * 2);
  b.host_per_kernel = f.host_per_kernel;
  return b;
}

plan::KernelList gpt_layer_grad_accumulation(const LayerShape& s) {
  const double params = (12 * s.hidden * s.hidden + 13 * s.hidden) / s.tp;
  plan::KernelList k;
  k.dtype = s.dtype;
  k.memory_bytes = {bytes(3 * params * static_cast<double>(plan::dtype_size(s.dtype)))};
  return k;
}

plan::KernelList kv_cache_kernels(const LayerShape& s, double sequence, KernelPasses passes) {
  const double per_token = s.sequences * s.hidden / s.tp * static_cast<double>(plan::dtype_size(s.dtype));
  const double l = s.tokens;
  const double seen = s.context + s.tokens;
  auto bytes = [&](double tokens) {
    return checked_bytes(tokens * per_token, "the key-value cache's copies");
  };
  plan::KernelList k;
  k.dtype = s.dtype;
  for (int kv = 0; kv < 2; ++kv) {  // keys, then values
    if (passes != KernelPasses::backward)
      k.memory_bytes.push_back(bytes(2 * l));  // forward: the slice written into the cache
    if (passes == KernelPasses::forward) continue;
    k.memory_bytes.push_back(bytes(sequence));  // backward: the view's gradient, zeros over the cache
    k.memory_bytes.push_back(bytes(2 * seen));  //   and the slice's part copied in
    if (seen < sequence)                        //   summed with the next slice's gradient
      k.memory_bytes.push_back(bytes(3 * sequence));
    k.memory_bytes.push_back(bytes(2 * sequence));  //   the assignment's clone
    k.memory_bytes.push_back(bytes(l));             //   and its slice zeroed
  }
  return k;
}

plan::KernelList terapipe_attention_kernels(const LayerShape& s, KernelPasses passes) {
  const double e = static_cast<double>(plan::dtype_size(s.dtype));
  const double l = s.tokens;
  const double c = s.context;
  const double scores = s.sequences * s.heads / s.tp * l * (c + l);
  const double heads_out = s.sequences * l * s.hidden / s.tp;  // the queries and the attention's output
  const double cast = e < 4 ? 8 * scores : 0;  // bytes: fp32 softmax output, read back to cast
  plan::KernelList k;
  k.dtype = s.dtype;
  for (int pass = 1; pass <= 2; ++pass) {  // forward, then backward at twice the bytes
    if ((pass == 1 && passes == KernelPasses::backward) || (pass == 2 && passes == KernelPasses::forward))
      continue;
    k.memory_bytes.push_back(bytes(pass * 2 * heads_out * e));  // queries scaled
    if (pass == 1) {
      k.memory_bytes.push_back(
          bytes((5 * l * l + 3 * l * c) * e));          // causal mask, joined to the context's zeros
      k.memory_bytes.push_back(bytes(2 * scores * e));  // mask added to the scores
    }
    if (cast > 0) k.memory_bytes.push_back(bytes(pass * cast));  // softmax in fp32, cast back
    k.memory_bytes.push_back(bytes(pass * 2 * heads_out * e));   // heads' output made contiguous
  }
  return k;
}

int terapipe_forward_kernel_count(const LayerShape& s) {
  std::size_t n = 0;
  for (const plan::KernelList& k :
       {layer_forward(s), kv_cache_kernels(s, s.context + s.tokens, KernelPasses::forward),
        terapipe_attention_kernels(s, KernelPasses::forward)})
    n += k.gemms.size() + k.memory_bytes.size();
  return static_cast<int>(n);
}

std::vector<plan::KernelList> gpt_layer_kernel_lists(const Model& m, const std::vector<int>& tps,
                                                     const std::vector<int>& microbatch_sizes) {
  if (m.hidden <= 0 || m.heads <= 0 || m.sequence <= 0)
    throw UsageError(fmt::format("model {} is not a GPT model (hidden, heads and sequence)", m.name));
  std::vector<plan::KernelList> out;
  for (int t : tps) {
    if (t < 1 || m.heads % t != 0)
      throw UsageError(
          fmt::format("tensor-parallel degree {} does not divide the {} heads of {}", t, m.heads, m.name));
    for (int b : microbatch_sizes) {
      if (b < 1) throw UsageError(fmt::format("a microbatch size is at least 1, got {}", b));
      out.push_back(layer_forward(whole_sequences(m, b, t)));
      out.push_back(layer_backward(out.back()));
    }
  }
  return out;
}

}  // namespace meshsim::model
