#include "planner/layer_kernels.h"

namespace meshsim::planner {

LayerKernels gpt_layer_forward(const LayerShape& s) {
  const double h = s.hidden;
  const double t = s.tp;
  const double T = s.sequences * s.tokens;
  const double kv = s.context + s.tokens;
  const double e = static_cast<double>(plan::dtype_size(s.dtype));
  const double heads = s.sequences * s.heads / t;  // independent attention products
  LayerKernels k;
  k.dtype = s.dtype;
  k.gemms = {{T, 3 * h / t, h, 1},
             {s.tokens, kv, h / s.heads, heads},
             {s.tokens, h / s.heads, kv, heads},
             {T, h, h / t, 1},
             {T, 4 * h / t, h, 1},
             {T, h, 4 * h / t, 1}};
  k.memory_bytes = {2 * T * h * e, 2 * heads * s.tokens * kv * e, 3 * T * h * e,
                    2 * T * h * e, 2 * T * 4 * h / t * e,         3 * T * h * e};
  return k;
}

LayerKernels gpt_layer_backward(const LayerKernels& f) {
  LayerKernels b;
  b.dtype = f.dtype;
  for (const auto& g : f.gemms) {
    b.gemms.push_back({g.m, g.k, g.n, g.batch});  // input gradient
    b.gemms.push_back({g.k, g.n, g.m, g.batch});  // weight (or value) gradient
  }
  for (double bytes : f.memory_bytes) b.memory_bytes.push_back(2 * bytes);
  return b;
}

double kernels_seconds(const sim::DeviceModel& d, const LayerKernels& k) {
  double s = 0;
  for (const auto& g : k.gemms) s += d.gemm_time(g.m, g.n, g.k, k.dtype, g.batch).seconds();
  for (double bytes : k.memory_bytes)
    s += d.kernel_time(0, Bytes(static_cast<std::int64_t>(bytes)), k.dtype).seconds();
  return s;
}

}  // namespace meshsim::planner
