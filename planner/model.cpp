#include "planner/model.h"

#include <fmt/format.h>

#include "core/error.h"
#include "plan/plan_json.h"

namespace meshsim::planner {

namespace {

constexpr const char* kFormat = "meshsim.model/1";

double positive(const JsonCursor& c) {
  const double v = c.as_number();
  if (!(v >= 0)) c.fail("must not be negative");
  return v;
}

}  // namespace

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

Model gpt_model(const std::string& name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                std::int64_t sequence, std::int64_t vocabulary, plan::DType dtype) {
  if (layers < 1 || hidden < 1 || heads < 1 || sequence < 1 || vocabulary < 1)
    throw UsageError("a GPT model needs positive layers, hidden, heads, sequence and vocabulary");
  if (hidden % heads != 0)
    throw UsageError(fmt::format("hidden size {} is not divisible by {} heads", hidden, heads));
  Model m;
  m.name = name;
  m.dtype = dtype;
  m.sequence = sequence;
  m.hidden = hidden;
  m.heads = heads;
  const auto h = static_cast<double>(hidden);
  const auto s = static_cast<double>(sequence);
  const auto v = static_cast<double>(vocabulary);
  const auto e = static_cast<double>(plan::dtype_size(dtype));
  m.description = fmt::format("GPT: {} layers, hidden {}, {} heads, sequence {}, vocabulary {}", layers,
                              hidden, heads, sequence, vocabulary);
  // Embedding: a lookup (no matmul FLOPs); its output, s·h, is what the first layer reads.
  m.layers.push_back({"embedding", 0.0, (v + s) * h * e, s * h * e, {sequence, hidden}, 0, false, {}});
  for (std::int64_t l = 0; l < layers; ++l)
    m.layers.push_back({fmt::format("layer{}", l),
                        24 * s * h * h + 4 * s * s * h,
                        (12 * h * h + 13 * h) * e,
                        s * h * (34 + 5 * static_cast<double>(heads) * s / h),
                        {sequence, hidden},
                        2,
                        true,
                        {}});
  // LM head: the logits matmul (weights tied to the embedding: no new parameters).
  m.layers.push_back({"lm_head", 2 * s * h * v, 0.0, s * v * e, {sequence, vocabulary}, 0, false, {}});
  return m;
}

void check_tensor_parallel(const Model& m, int tp) {
  if (tp < 1) throw UsageError("the tensor-parallel degree must be at least 1");
  if (m.heads > 0 && m.heads % tp != 0)
    throw UsageError(
        fmt::format("tensor parallelism splits the attention heads: {}'s {} heads do not split "
                    "over {} tensor ranks (the degree must divide {})",
                    m.name, m.heads, tp, m.heads));
}

double activation_bytes(const Model& m, const LayerCost& l, int tp) {
  if (!l.transformer || tp <= 1) return l.activation_bytes / std::max(tp, 1);
  const auto h = static_cast<double>(m.hidden);
  const auto s = static_cast<double>(m.sequence);
  const auto t = static_cast<double>(tp);
  // 16-bit activations; scale for other element sizes.
  const double scale = static_cast<double>(plan::dtype_size(m.dtype)) / 2.0;
  return s * h * (10 + 24 / t + 5 * static_cast<double>(m.heads) * s / (h * t)) * scale;
}

Model model_from_json(const Json& j, const std::string& file) {
  const JsonCursor root(j, file);
  if (!root.is_object()) root.fail("a model is a JSON object");
  root.require_format(kFormat);
  const std::string kind = root["kind"].as_name();
  if (kind == "gpt") {
    root.allow_only({"format", "name", "description", "kind", "layers", "hidden", "heads", "sequence",
                     "vocabulary", "dtype"});
    const plan::DType dt = root.has("dtype") ? plan::dtype_from_json(root["dtype"]) : plan::kDefaultMathDType;
    const auto hidden = root["hidden"].as_int_in(1, INT64_C(1) << 20);
    const auto heads = root["heads"].as_int_in(1, 1 << 16);
    if (hidden % heads != 0)
      root["heads"].fail(fmt::format("hidden size {} is not divisible by {}", hidden, heads));
    Model m = gpt_model(root["name"].as_name(), root["layers"].as_int_in(1, 100000), hidden, heads,
                        root["sequence"].as_int_in(1, INT64_C(1) << 24),
                        root["vocabulary"].as_int_in(1, INT64_C(1) << 24), dt);
    if (auto d = root.find("description")) m.description = d->as_string();
    return m;
  }
  if (kind != "layers") root["kind"].fail("expected \"gpt\" or \"layers\"");
  root.allow_only({"format", "name", "description", "kind", "dtype", "layers"});
  Model m;
  m.name = root["name"].as_name();
  if (auto d = root.find("description")) m.description = d->as_string();
  if (root.has("dtype")) m.dtype = plan::dtype_from_json(root["dtype"]);
  const JsonCursor ls = root["layers"];
  if (ls.size() == 0) ls.fail("a model needs at least one layer");
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const JsonCursor c = ls.at(i);
    c.allow_only(
        {"name", "forward_flops", "params", "activation", "output_shape", "tp_allreduces", "skip_to"});
    LayerCost l;
    l.name = c["name"].as_name();
    l.forward_flops = positive(c["forward_flops"]);
    l.param_bytes = static_cast<double>(c["params"].as_bytes().count());
    l.activation_bytes = static_cast<double>(c["activation"].as_bytes().count());
    const JsonCursor shape = c["output_shape"];
    if (shape.size() == 0) shape.fail("an output shape has at least one dimension");
    for (std::size_t d = 0; d < shape.size(); ++d)
      l.output_shape.push_back(shape.at(d).as_int_in(1, INT64_C(1) << 40));
    if (auto t = c.find("tp_allreduces")) l.tp_allreduces = static_cast<int>(t->as_int_in(0, 64));
    if (auto sk = c.find("skip_to"))
      for (std::size_t k = 0; k < sk->size(); ++k) {
        const JsonCursor to = sk->at(k);
        const auto target = to.as_int_in(0, static_cast<std::int64_t>(ls.size()) - 1);
        if (target <= static_cast<std::int64_t>(i) + 1)
          to.fail(fmt::format("a skip connection goes to a later layer than {} (the next one is implied)",
                              i + 1));
        l.skip_to.push_back(static_cast<int>(target));
      }
    m.layers.push_back(std::move(l));
  }
  return m;
}

Model load_model_file(const std::string& file) {
  return model_from_json(read_json_file(file), file);
}

}  // namespace meshsim::planner
