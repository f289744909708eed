#include "search/results.h"

#include <charconv>
#include <cstdint>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "topology/topology_json.h"

namespace meshsim::search {

namespace {

constexpr std::size_t kColumns = 23;

// Splits one CSV line; a field may be quoted ("" inside is a quote).
std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> out(1);
  bool in_quotes = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_quotes && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      in_quotes = !in_quotes;
    } else if (c == ',' && !in_quotes) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

}  // namespace

std::string csv_header() {
  return "dp,tp,pp,microbatches,microbatch_size,schedule,virtual_stages,recompute,sequence_parallel,zero,"
         "flash_attention,ep,cp,reshard,status,iteration_s,samples_per_s,tflops_per_gpu,bubble,exposed_comm_"
         "s,"
         "peak_memory_bytes,key,reason\n";
}

std::string csv_row(const Result& r, const std::string& key) {
  const pipeline::PipelineConfig& c = r.config;
  const Metrics& m = r.metrics;
  std::string out = fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},", c.dp, c.tp, c.pp,
                                c.microbatches, c.microbatch_size, to_string(c.schedule), c.virtual_stages,
                                model::kRecomputeNames.name(c.recompute), c.sequence_parallel ? 1 : 0,
                                static_cast<int>(c.zero), c.flash_attention ? 1 : 0, c.ep, c.cp,
                                to_string(c.reshard), to_string(r.status));
  out += r.status == Status::simulated ? fmt::format("{},{},{},{},{},", m.iteration_s, m.samples_per_s,
                                                     m.tflops_per_gpu, m.bubble, m.exposed_comm_s)
                                       : std::string(",,,,,");
  out += fmt::format("{},{},{}\n", r.peak_memory_bytes, key,
                     r.reason.empty() ? std::string() : csv_quoted(r.reason));
  return out;
}

void write_results_csv(std::ostream& out, const std::vector<Result>& results,
                       const std::vector<std::string>& keys) {
  MESHSIM_ASSERT(results.size() == keys.size(), "one key per result");
  out << csv_header();
  for (std::size_t i = 0; i < results.size(); ++i) out << csv_row(results[i], keys[i]);
}

std::string results_csv(const std::vector<Result>& results, const std::vector<std::string>& keys) {
  std::ostringstream out;
  write_results_csv(out, results, keys);
  return std::move(out).str();
}

KeyedResult parse_csv_row(std::string_view line, const std::string& file, std::size_t line_no) {
  const std::string where = fmt::format("line {}", line_no);
  const auto f = fields_of(line);
  if (f.size() != kColumns)
    throw ConfigError(file, where, fmt::format("expected {} columns, found {}", kColumns, f.size()));
  auto number = [&](std::size_t k, auto& v) {
    const std::string& s = f[k];
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size())
      throw ConfigError(file, where, fmt::format("column {}: \"{}\" is not a number", k + 1, s));
  };
  KeyedResult k;
  pipeline::PipelineConfig& c = k.result.config;
  number(0, c.dp);
  number(1, c.tp);
  number(2, c.pp);
  number(3, c.microbatches);
  number(4, c.microbatch_size);
  const auto sch = model::schedule_from(f[5]);
  const auto rc = model::kRecomputeNames.parse(f[7]);
  const auto rs = reshard::strategy_from(f[13]);
  int sp = 0, zero = 0, flash = 0;
  number(6, c.virtual_stages);
  number(8, sp);
  number(9, zero);
  number(10, flash);
  number(11, c.ep);
  number(12, c.cp);
  if (!sch || !rs || !rc || zero < 0 || zero > 3 || c.ep < 1 || c.cp < 1)
    throw ConfigError(file, where, "unknown schedule, recomputation, ZeRO stage or stage transfer");
  c.schedule = *sch;
  c.reshard = *rs;
  c.recompute = *rc;
  c.sequence_parallel = sp != 0;
  c.zero = static_cast<model::ZeroStage>(zero);
  c.flash_attention = flash != 0;
  Result& r = k.result;
  if (f[14] == "simulated") {
    r.status = Status::simulated;
    number(15, r.metrics.iteration_s);
    number(16, r.metrics.samples_per_s);
    number(17, r.metrics.tflops_per_gpu);
    number(18, r.metrics.bubble);
    number(19, r.metrics.exposed_comm_s);
  } else if (f[14] == "out_of_memory" || f[14] == "invalid") {
    r.status = f[14] == "invalid" ? Status::invalid : Status::out_of_memory;
  } else {
    throw ConfigError(file, where, fmt::format("unknown status \"{}\"", f[14]));
  }
  number(20, r.peak_memory_bytes);
  k.key = f[21];
  r.reason = f[22];
  return k;
}

std::string fingerprint(const model::Model& m, const topology::Topology& t,
                        const std::vector<sim::DeviceModel>& device_models, std::string_view version) {
  std::string s =
      fmt::format("meshsim {}|model {} {} {} {} {} {}|", version, m.name, plan::to_string(m.dtype),
                  m.sequence, m.hidden, m.heads, m.architecture ? describe(*m.architecture) : "");
  for (const model::LayerCost& l : m.layers) {
    s += fmt::format("{} {} {} {} [{}] {} {} [{}]", l.name, l.forward_flops, l.param_bytes,
                     l.activation_bytes, fmt::join(l.output_shape, " "), l.tp_allreduces, l.transformer,
                     fmt::join(l.skip_to, " "));
    for (const model::SideOutput& o : l.side_outputs)
      s += fmt::format(" side [{}] to [{}]", fmt::join(o.shape, " "), fmt::join(o.to, " "));
    if (l.kernels) {
      for (const model::LayerGemm& g : l.kernels->gemms)
        s += fmt::format(" gemm {} {} {} {} {} {}", g.shape.m, g.shape.n, g.shape.k, g.shape.batch,
                         g.batch_grows, g.weights);
      s += fmt::format(" memory [{}] allreduces [{}]", fmt::join(l.kernels->memory_bytes, " "),
                       fmt::join(l.kernels->allreduce_elements, " "));
    }
    s += ';';
  }
  for (const sim::DeviceModel& d : device_models)
    s += fmt::format("|device {} {} {} {} {} {} {} {} [{}] {}", d.name, d.fp32_flops, d.fp16_flops,
                     d.fp64_flops, d.int8_ops, d.memory_bandwidth.bytes_per_second_f(),
                     d.launch_overhead.count_ps(), d.efficiency, fmt::join(d.compute_efficiency, " "),
                     d.memory_capacity.count());
  for (const sim::DeviceModel& d : device_models) {  // figures a model may carry, named only when it does
    if (d.attention_efficiency) s += fmt::format("|{} attention {}", d.name, *d.attention_efficiency);
    if (d.fp8_efficiency) s += fmt::format("|{} fp8 {}", d.name, *d.fp8_efficiency);
  }
  s += "|topology " + dump_json(topology::topology_to_json(t));
  return fmt::format("{:016x}", fnv1a(s));
}

std::string config_key(const std::string& fingerprint, const pipeline::PipelineConfig& c) {
  const std::string cfg = fmt::format("|dp{} tp{} pp{} m{} b{} {} v{} rc{} {} auto{} {} first{}", c.dp, c.tp,
                                      c.pp, c.microbatches, c.microbatch_size, to_string(c.schedule),
                                      c.virtual_stages, c.full_recompute() ? 1 : 0, to_string(c.reshard),
                                      c.reshard_auto ? 1 : 0, to_string(c.balance), c.first_gpu);
  // What a configuration sets beyond those joins the key only when set, so
  // keys of configurations without it stay as they were.
  std::string more;
  if (c.recompute == model::Recompute::selective) more += " selective";
  if (c.sequence_parallel) more += " sp";
  if (c.zero != model::ZeroStage::none) more += fmt::format(" zero{}", static_cast<int>(c.zero));
  if (c.flash_attention) more += " flash";
  if (c.ep > 1) more += fmt::format(" ep{}", c.ep);
  if (c.cp > 1) more += fmt::format(" cp{}", c.cp);
  if (c.fp8) more += " fp8";
  if (c.overlap_grad_reduce) more += " ogr";
  if (c.overlap_param_gather) more += " opg";
  if (c.tp_comm_overlap) more += " tpo";
  if (c.host_per_kernel > Time::zero()) more += fmt::format(" host{}", c.host_per_kernel.count_ps());
  if (c.memory_reserve != model::kDefaultReserve) more += fmt::format(" reserve{}", c.memory_reserve.count());
  return fmt::format("{:016x}", fnv1a(fingerprint + cfg + more));
}

}  // namespace meshsim::search
