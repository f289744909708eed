#pragma once
// Models for pipeline training: per-layer compute, parameters and
// activations. Format `meshsim.model/1` (configs/models/), three forms:
//
//   "kind": "gpt"     layers, hidden h, heads a, sequence s, vocabulary V,
//                     dtype; optionally kv_heads, ffn_hidden and an "moe"
//                     block; expanded into an embedding, `layers`
//                     transformer layers and the language-model head.
//   "kind": "llama"   the same sizes with ffn_hidden required: a Llama-style
//                     transformer (SwiGLU, grouped-query attention, RMSNorm,
//                     rotary positions, an untied output layer); with an
//                     "moe" block, Mixtral's form. model/transformer.h has
//                     both families' parameter and FLOP counts.
//   "kind": "layers"  an explicit list, per layer: forward FLOPs, parameter
//                     bytes, stored activation bytes and the output tensor
//                     shape, all per sample, and optionally `skip_to`:
//                     the later layers that also read the output (skip
//                     connections; the U-Transformer of the MLSys'23 paper
//                     is written this way). Layer i always feeds i + 1.
//                     A layer may also list further tensors later layers
//                     read (`side_outputs`: a U-Net block's skip outputs),
//                     and its kernels (`kernels`: GEMMs, memory-bound
//                     kernels and tensor-parallel all-reduces, per sample),
//                     which then give its forward FLOPs. Every layer has a
//                     kernel list or none does.
//
// GPT formulas, per sample (batch 1), t-way tensor parallel (Megatron;
// transformer.h writes them for every family):
//   transformer layer forward FLOPs  24·s·h² + 4·s²·h          (Narayanan et
//                                    al., SC'21: the matmuls, ×2 FLOPs per MAC)
//   LM head forward FLOPs            2·s·h·V
//   backward FLOPs                   2 × forward (input and weight gradients,
//                                    one half each: ZB-H1 splits them so)
//   parameters per layer             12h² + 13h; embedding (V + s)·h (the
//                                    final LayerNorm's 2h left out, as in
//                                    Narayanan et al.'s count); a Llama's
//                                    output layer V·h + h (its RMSNorm)
//   stored activations per layer     s·h·(34 + 5·a·s/h) bytes at 16-bit
//                                    (Korthikanti et al., 2022, no
//                                    recomputation); under t-way tensor
//                                    parallelism s·h·(10 + 24/t + 5·a·s/(h·t));
//                                    every family's in model/memory.h
//   layer output                     s·h elements (what crosses stages)
//   tensor-parallel all-reduces      2 per layer forward, 2 backward, of
//                                    s·h elements each
//   weights, gradients and Adam      16 bytes per parameter (fp16 weights
//                                    and gradients, fp32 master, m and v)

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/units.h"
#include "model/memory.h"
#include "model/transformer.h"
#include "plan/plan.h"

namespace meshsim::model {

/// A GEMM of a layer's forward pass, per sample: `shape` as a plan's kernel
/// GEMM (sim/compute_model.h). A microbatch of b samples multiplies its
/// rows m, or its batch count when `batch_grows` (products of activations
/// per head, as attention's). `weights`: the second operand is a weight,
/// whose gradient a split backward (zb-h1) computes in W.
struct LayerGemm {
  plan::KernelList::Gemm shape;
  bool batch_grows = false;
  bool weights = true;
  friend bool operator==(const LayerGemm&, const LayerGemm&) = default;
};

/// A layer's forward kernels, per sample, in order of kind: its GEMMs, its
/// memory-bound kernels (bytes read and written by each) and the elements
/// of each all-reduce it needs under tensor parallelism.
struct LayerKernels {
  std::vector<LayerGemm> gemms;
  std::vector<double> memory_bytes;
  std::vector<double> allreduce_elements;
  friend bool operator==(const LayerKernels&, const LayerKernels&) = default;
};

/// A tensor a layer makes besides its output, read only by later layers.
struct SideOutput {
  std::vector<std::int64_t> shape;  // per sample, elements of the model's dtype
  std::vector<int> to;              // the layers that read it
  friend bool operator==(const SideOutput&, const SideOutput&) = default;
};

struct LayerCost {
  std::string name;
  double forward_flops = 0;     // per sample, whole layer (divide by t for one tensor-parallel rank)
  double param_bytes = 0;       // whole layer
  double activation_bytes = 0;  // per sample, stored for the backward, on one rank at t = 1
  std::vector<std::int64_t> output_shape;  // per sample
  int tp_allreduces = 0;          // all-reduces of the output size per forward under tensor parallelism
  bool transformer = false;       // a layer of Model::architecture (its activations: model/memory.h)
  std::vector<int> skip_to = {};  // later layers that also read this output (a U-Net's skip connections)
  std::vector<SideOutput> side_outputs = {};           // further tensors for later layers
  std::optional<LayerKernels> kernels = std::nullopt;  // layers form: the forward's kernels, per sample
  bool moe = false;               // a transformer layer with experts (TransformerSpec::moe)
  double expert_param_bytes = 0;  // of param_bytes, the routed experts' (split by expert parallelism)
};

struct Model {
  std::string name;
  std::string description;
  plan::DType dtype = plan::kDefaultMathDType;
  std::int64_t sequence = 0;  // tokens per sample (GPT); 0 for layer lists
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::optional<TransformerSpec> architecture;  // gpt and llama forms
  std::vector<LayerCost> layers;

  [[nodiscard]] double forward_flops() const;  // per sample
  [[nodiscard]] double param_bytes() const;
  [[nodiscard]] double params() const;  // parameter count
};

/// The model of a transformer spec: an embedding, its layers and the output
/// layer; UsageError as check_spec.
[[nodiscard]] Model transformer_model(const std::string& name, const TransformerSpec& spec,
                                      plan::DType dtype = plan::kDefaultMathDType);

/// GPT-style transformer; UsageError for non-positive sizes or h not divisible by a.
[[nodiscard]] Model gpt_model(const std::string& name, std::int64_t layers, std::int64_t hidden,
                              std::int64_t heads, std::int64_t sequence, std::int64_t vocabulary,
                              plan::DType dtype = plan::kDefaultMathDType);

/// UsageError when Megatron tensor parallelism of degree `tp` cannot split
/// the model: its attention heads (GPT models) must divide evenly.
void check_tensor_parallel(const Model& m, int tp);

/// UsageError when context parallelism of degree `cp` cannot split the
/// model's sequences: it needs a transformer family (model/transformer.h),
/// fused attention (the ring runs inside the fused attention kernel, as in
/// Megatron-Core, whose context parallelism needs Transformer Engine's
/// fused attention) and a sequence of 2·cp equal chunks (each rank takes
/// chunks i and 2·cp − 1 − i, which balances the causal work).
void check_context_parallel(const Model& m, int cp, bool fused_attention);

/// Stored activation bytes per sample of layer `l` on one tensor- and
/// context-parallel rank: a transformer layer's by model/memory.h, any
/// other's ÷ tp·cp.
[[nodiscard]] double activation_bytes(const Model& m, const LayerCost& l, const ActivationOptions& o);

/// Bytes all-reduced per sample per forward pass of layer `l` under tensor
/// parallelism: its kernel list's all-reduces, else `tp_allreduces` of its
/// output's size.
[[nodiscard]] double tp_allreduce_bytes(const Model& m, const LayerCost& l);

/// The keys and values a transformer layer computes per sample, 2·s·g·d
/// elements of the model's type (none for other layers): what context
/// parallelism gathers per layer and pass.
[[nodiscard]] double kv_bytes(const Model& m, const LayerCost& l);

/// Whether the pipeline times the model's passes kernel by kernel
/// (pipeline/pass_kernels.h): GPT models, and layer lists with kernels.
[[nodiscard]] bool has_kernel_lists(const Model& m);
/// Whether `m` is a layer list whose layers list their kernels (all or none do).
[[nodiscard]] bool layers_list_kernels(const Model& m);

/// Loads meshsim.model/1; ConfigError with the file and JSON path on mistakes.
[[nodiscard]] Model load_model_file(const std::string& file);
[[nodiscard]] Model model_from_json(const Json& j, const std::string& file);

/// Bytes of weights, gradients and Adam state per parameter (mixed precision).
inline constexpr double kTrainingBytesPerParam = kMixedPrecision.total();

}  // namespace meshsim::model
