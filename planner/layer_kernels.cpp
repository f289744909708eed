#include "planner/layer_kernels.h"

namespace meshsim::planner {

namespace {
Bytes bytes(double b) {
  return Bytes(static_cast<std::int64_t>(b));
}
}  // namespace

plan::KernelList gpt_layer_forward(const LayerShape& s) {
  const double h = s.hidden;
  const double t = s.tp;
  const double T = s.sequences * s.tokens;
  const double kv = s.context + s.tokens;
  const double e = static_cast<double>(plan::dtype_size(s.dtype));
  const double heads = s.sequences * s.heads / t;  // independent attention products
  plan::KernelList k;
  k.dtype = s.dtype;
  k.gemms = {{T, 3 * h / t, h, 1},
             {s.tokens, kv, h / s.heads, heads},
             {s.tokens, h / s.heads, kv, heads},
             {T, h, h / t, 1},
             {T, 4 * h / t, h, 1},
             {T, h, 4 * h / t, 1}};
  k.memory_bytes = {bytes(2 * T * h * e), bytes(2 * heads * s.tokens * kv * e), bytes(3 * T * h * e),
                    bytes(2 * T * h * e), bytes(2 * T * 4 * h / t * e),         bytes(3 * T * h * e)};
  return k;
}

plan::KernelList gpt_layer_backward(const plan::KernelList& f) {
  plan::KernelList b;
  b.dtype = f.dtype;
  for (const auto& g : f.gemms) {
    b.gemms.push_back({g.m, g.k, g.n, g.batch});  // input gradient
    b.gemms.push_back({g.k, g.n, g.m, g.batch});  // weight (or value) gradient
  }
  for (Bytes bytes : f.memory_bytes) b.memory_bytes.push_back(bytes * 2);
  return b;
}

}  // namespace meshsim::planner
