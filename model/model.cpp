#include "model/model.h"

#include <numeric>

#include <fmt/format.h>

#include "core/error.h"
#include "model/memory.h"
#include "plan/json_fields.h"

namespace meshsim::model {

namespace {

constexpr const char* kFormat = "meshsim.model/1";

double positive(const JsonCursor& c) {
  const double v = c.as_number();
  if (!(v >= 0)) c.fail("must not be negative");
  return v;
}

// A later layer than `i` (the next one, i + 1, is implied for the output).
int reader_from_json(const JsonCursor& c, std::size_t i, std::size_t layers, std::size_t first) {
  const auto target = c.as_int_in(0, static_cast<std::int64_t>(layers) - 1);
  if (target < static_cast<std::int64_t>(first))
    c.fail(
        first == i + 2
            ? fmt::format("a skip connection goes to a later layer than {} (the next one is implied)", i + 1)
            : fmt::format("a side output goes to a later layer than {}", i));
  return static_cast<int>(target);
}

LayerGemm gemm_from_json(const JsonCursor& c) {
  c.allow_only({"m", "n", "k", "batch", "grows", "weights"});
  constexpr std::int64_t kMax = INT64_C(1) << 40;
  LayerGemm g;
  g.shape = {static_cast<double>(c["m"].as_int_in(1, kMax)), static_cast<double>(c["n"].as_int_in(1, kMax)),
             static_cast<double>(c["k"].as_int_in(1, kMax)),
             c.has("batch") ? static_cast<double>(c["batch"].as_int_in(1, kMax)) : 1.0};
  if (auto grows = c.find("grows")) {
    const std::string v = grows->as_name();
    if (v != "m" && v != "batch") grows->fail("expected \"m\" or \"batch\"");
    g.batch_grows = v == "batch";
  }
  if (auto w = c.find("weights")) g.weights = w->as_bool();
  return g;
}

LayerKernels kernels_from_json(const JsonCursor& c) {
  c.allow_only({"gemms", "memory", "allreduces"});
  LayerKernels k;
  if (auto g = c.find("gemms"))
    for (std::size_t i = 0; i < g->size_at_most(4096, "GEMMs"); ++i)
      k.gemms.push_back(gemm_from_json(g->at(i)));
  if (auto mem = c.find("memory"))
    for (std::size_t i = 0; i < mem->size_at_most(4096, "memory-bound kernels"); ++i) {
      const auto b = mem->at(i).as_bytes().count();
      if (b <= 0) mem->at(i).fail("a memory-bound kernel moves at least one byte");
      k.memory_bytes.push_back(static_cast<double>(b));
    }
  if (auto ar = c.find("allreduces"))
    for (std::size_t i = 0; i < ar->size_at_most(4096, "all-reduces"); ++i)
      k.allreduce_elements.push_back(static_cast<double>(ar->at(i).as_int_in(1, INT64_C(1) << 40)));
  if (k.gemms.empty() && k.memory_bytes.empty())
    c.fail("a kernel list has at least one GEMM or memory kernel");
  return k;
}

LayerCost layer_from_json(const JsonCursor& c, std::size_t i, std::size_t layers) {
  c.allow_only({"name", "forward_flops", "params", "activation", "output_shape", "tp_allreduces", "skip_to",
                "side_outputs", "kernels"});
  LayerCost l;
  l.name = c["name"].as_name();
  if (auto k = c.find("kernels")) {
    l.kernels = kernels_from_json(*k);
    if (c.has("forward_flops"))
      c["forward_flops"].fail("a layer with kernels has their FLOPs: leave this out");
    if (c.has("tp_allreduces") && !l.kernels->allreduce_elements.empty())
      c["tp_allreduces"].fail("the kernels list this layer's all-reduces: give one or the other");
    for (const LayerGemm& g : l.kernels->gemms) l.forward_flops += g.shape.flops();
  } else {
    l.forward_flops = positive(c["forward_flops"]);
  }
  l.param_bytes = static_cast<double>(c["params"].as_bytes().count());
  l.activation_bytes = static_cast<double>(c["activation"].as_bytes().count());
  l.output_shape = plan::shape_from_json(c["output_shape"]);
  if (auto t = c.find("tp_allreduces")) l.tp_allreduces = static_cast<int>(t->as_int_in(0, 64));
  if (auto sk = c.find("skip_to"))
    for (std::size_t k = 0; k < sk->size(); ++k)
      l.skip_to.push_back(reader_from_json(sk->at(k), i, layers, i + 2));
  if (auto so = c.find("side_outputs"))
    for (std::size_t k = 0; k < so->size_at_most(64, "side outputs"); ++k) {
      const JsonCursor o = so->at(k);
      o.allow_only({"shape", "to"});
      SideOutput out{plan::shape_from_json(o["shape"]), {}};
      const JsonCursor to = o["to"];
      if (to.size() == 0) to.fail("a side output has at least one reader");
      for (std::size_t r = 0; r < to.size(); ++r)
        out.to.push_back(reader_from_json(to.at(r), i, layers, i + 1));
      l.side_outputs.push_back(std::move(out));
    }
  return l;
}

}  // namespace

double tp_allreduce_bytes(const Model& m, const LayerCost& l) {
  if (l.kernels && !l.kernels->allreduce_elements.empty()) {
    const auto& ar = l.kernels->allreduce_elements;
    return std::accumulate(ar.begin(), ar.end(), 0.0) * static_cast<double>(plan::dtype_size(m.dtype));
  }
  return l.tp_allreduces * static_cast<double>(plan::Tensor{"", l.output_shape, m.dtype}.bytes().count());
}

double kv_bytes(const Model& m, const LayerCost& l) {
  if (!l.transformer || !m.architecture) return 0;
  return 2 * static_cast<double>(m.sequence) * m.architecture->kv_width() *
         static_cast<double>(plan::dtype_size(m.dtype));
}

bool has_kernel_lists(const Model& m) {
  if (m.hidden > 0 && m.heads > 0 && m.sequence > 0) return true;
  return layers_list_kernels(m);
}

bool layers_list_kernels(const Model& m) {
  return !m.layers.empty() && m.layers.front().kernels.has_value();
}

double Model::forward_flops() const {
  double f = 0;
  for (const auto& l : layers) f += l.forward_flops;
  return f;
}

double Model::param_bytes() const {
  double b = 0;
  for (const auto& l : layers) b += l.param_bytes;
  return b;
}

double Model::params() const {
  return param_bytes() / static_cast<double>(plan::dtype_size(dtype));
}

Model transformer_model(const std::string& name, const TransformerSpec& spec, plan::DType dtype) {
  check_spec(spec);
  Model m;
  m.name = name;
  m.dtype = dtype;
  m.sequence = spec.sequence;
  m.hidden = spec.hidden;
  m.heads = spec.heads;
  m.architecture = spec;
  const auto h = static_cast<double>(spec.hidden);
  const auto s = static_cast<double>(spec.sequence);
  const auto v = static_cast<double>(spec.vocabulary);
  const auto e = static_cast<double>(plan::dtype_size(dtype));
  m.description = describe(spec);
  const std::vector<std::int64_t> hidden_shape{spec.sequence, spec.hidden};
  // Embedding: a lookup (no matmul FLOPs); its output, s·h, is what the first layer reads.
  LayerCost embedding{"embedding", 0.0, (v + (spec.learned_positions() ? s : 0)) * h * e, s * h * e,
                      hidden_shape};
  m.layers.push_back(std::move(embedding));
  for (std::int64_t l = 0; l < spec.layers; ++l) {
    LayerCost layer{fmt::format("layer{}", l), layer_forward_flops(spec, l), layer_params(spec, l) * e, 0,
                    hidden_shape};
    layer.tp_allreduces = 2;
    layer.transformer = true;
    layer.moe = spec.is_moe_layer(l);
    if (layer.moe)
      layer.expert_param_bytes = static_cast<double>(spec.moe->experts) *
                                 spec.mlp_params(static_cast<double>(spec.moe->expert_ffn)) * e;
    layer.activation_bytes = layer_activation_bytes(spec, layer.moe, e, {});
    m.layers.push_back(std::move(layer));
  }
  // Output layer: the logits matmul; tied weights are the embedding's (no new parameters).
  const double head_params = spec.tied_embeddings() ? 0.0 : (v * h + spec.norm_params()) * e;
  m.layers.push_back({"lm_head", 2 * s * h * v, head_params, s * v * e, {spec.sequence, spec.vocabulary}});
  return m;
}

Model gpt_model(const std::string& name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                std::int64_t sequence, std::int64_t vocabulary, plan::DType dtype) {
  if (layers < 1 || hidden < 1 || heads < 1 || sequence < 1 || vocabulary < 1)
    throw UsageError("a GPT model needs positive layers, hidden, heads, sequence and vocabulary");
  TransformerSpec spec;
  spec.family = Family::gpt;
  spec.layers = layers;
  spec.hidden = hidden;
  spec.heads = heads;
  spec.kv_heads = heads;
  spec.ffn_hidden = 4 * hidden;
  spec.sequence = sequence;
  spec.vocabulary = vocabulary;
  return transformer_model(name, spec, dtype);
}

void check_tensor_parallel(const Model& m, int tp) {
  if (tp < 1) throw UsageError("the tensor-parallel degree must be at least 1");
  if (m.heads > 0 && m.heads % tp != 0)
    throw UsageError(
        fmt::format("tensor parallelism splits the attention heads: {}'s {} heads do not split "
                    "over {} tensor ranks (the degree must divide {})",
                    m.name, m.heads, tp, m.heads));
}

void check_context_parallel(const Model& m, int cp, bool fused_attention) {
  if (cp < 1) throw UsageError("the context-parallel degree must be at least 1");
  if (cp == 1) return;
  if (!m.architecture)
    throw UsageError(fmt::format(
        "context parallelism splits a transformer's sequences: {} is not a transformer family", m.name));
  if (!fused_attention)
    throw UsageError(
        "context parallelism runs its key/value ring inside fused attention: add --flash-attention");
  if (m.sequence % (2 * cp) != 0)
    throw UsageError(fmt::format(
        "context parallelism of {} splits each sequence into 2 x {} equal chunks: {}'s {} tokens do not", cp,
        cp, m.name, m.sequence));
}

double activation_bytes(const Model& m, const LayerCost& l, const ActivationOptions& o) {
  if (!l.transformer || !m.architecture) return l.activation_bytes / std::max(o.tp, 1) / std::max(o.cp, 1);
  return layer_activation_bytes(*m.architecture, l.moe, static_cast<double>(plan::dtype_size(m.dtype)), o);
}

Model model_from_json(const Json& j, const std::string& file) {
  const JsonCursor root(j, file);
  if (!root.is_object()) root.fail("a model is a JSON object");
  root.require_format(kFormat);
  const std::string kind = root["kind"].as_name();
  if (const auto family = kFamilyNames.parse(kind)) {
    root.allow_only({"format", "name", "description", "kind", "layers", "hidden", "heads", "kv_heads",
                     "ffn_hidden", "sequence", "vocabulary", "dtype", "moe"});
    const plan::DType dt = root.has("dtype") ? plan::dtype_from_json(root["dtype"]) : plan::kDefaultMathDType;
    Model m = transformer_model(root["name"].as_name(), transformer_spec_from_json(root, *family), dt);
    if (auto d = root.find("description")) m.description = d->as_string();
    return m;
  }
  if (kind != "layers") root["kind"].fail("expected \"gpt\", \"llama\" or \"layers\"");
  root.allow_only({"format", "name", "description", "kind", "dtype", "layers"});
  Model m;
  m.name = root["name"].as_name();
  if (auto d = root.find("description")) m.description = d->as_string();
  if (root.has("dtype")) m.dtype = plan::dtype_from_json(root["dtype"]);
  const JsonCursor ls = root["layers"];
  if (ls.size() == 0) ls.fail("a model needs at least one layer");
  for (std::size_t i = 0; i < ls.size(); ++i) {
    m.layers.push_back(layer_from_json(ls.at(i), i, ls.size()));
    if (m.layers.back().kernels.has_value() != m.layers.front().kernels.has_value())
      ls.at(i).fail("every layer has \"kernels\" or none has (layer 0 " +
                    std::string(m.layers.front().kernels ? "has" : "has not") + ")");
  }
  return m;
}

Model load_model_file(const std::string& file) {
  return model_from_json(read_json_file(file), file);
}

}  // namespace meshsim::model
