#include "plan/kernels.h"

#include <cmath>
#include <unordered_set>

#include <fmt/format.h>

#include "core/unit_strings.h"
#include "plan/json_fields.h"

namespace meshsim::plan {

double KernelList::flops() const {
  double f = 0;
  for (const Gemm& g : gemms) f += g.flops();
  for (const Attention& a : attention) f += a.flops();
  return f;
}

Bytes KernelList::bytes() const {
  Bytes b;
  for (Bytes k : memory_bytes) b += k;
  return b;
}

namespace {

// A GEMM dimension: positive and at most 2^40 (a product of four stays
// finite and exact enough).
double dimension(const JsonCursor& c) {
  const double v = c.as_number();
  if (!(v > 0) || v > 1099511627776.0)
    c.fail(fmt::format("a GEMM dimension is between 0 and 2^40, got {}", v));
  return v;
}

KernelList::Gemm gemm_from_json(const JsonCursor& c) {
  if (!c.json().is_array() || c.size() < 3 || c.size() > 5)
    c.fail("a GEMM is [m, n, k], [m, n, k, batch] or [m, n, k, batch, \"fp8\"]");
  KernelList::Gemm g{dimension(c.at(0)), dimension(c.at(1)), dimension(c.at(2)), 1};
  if (c.size() >= 4) g.batch = dimension(c.at(3));
  if (c.size() == 5) {
    if (c.at(4).as_name() != "fp8") c.at(4).fail("a GEMM's fifth entry, its operands' precision, is \"fp8\"");
    g.fp8 = true;
  }
  return g;
}

KernelList::Attention attention_from_json(const JsonCursor& c) {
  c.allow_only({"batch", "queries", "keys", "head_dim", "pass"});
  KernelList::Attention a{dimension(c["batch"]), dimension(c["queries"]), dimension(c["keys"]),
                          dimension(c["head_dim"]), false};
  if (auto p = c.find("pass")) {
    const std::string pass = p->as_name();
    if (pass != "forward" && pass != "backward") p->fail("an attention kernel's pass is forward or backward");
    a.backward = pass == "backward";
  }
  return a;
}

}  // namespace

std::vector<KernelSet> kernel_sets_from_json(const JsonCursor& c) {
  std::vector<KernelSet> out;
  std::unordered_set<std::string> names;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const JsonCursor s = c.at(i);
    s.allow_only({"name", "dtype", "gemms", "attention", "memory_bytes", "host_per_kernel"});
    KernelSet k;
    k.name = s["name"].as_name();
    if (!names.insert(k.name).second) s["name"].fail(fmt::format("duplicate kernel set name \"{}\"", k.name));
    if (auto d = s.find("dtype")) k.kernels.dtype = dtype_from_json(*d);
    if (auto g = s.find("gemms"))
      for (std::size_t j = 0; j < g->size(); ++j) k.kernels.gemms.push_back(gemm_from_json(g->at(j)));
    if (auto a = s.find("attention"))
      for (std::size_t j = 0; j < a->size(); ++j)
        k.kernels.attention.push_back(attention_from_json(a->at(j)));
    if (auto m = s.find("memory_bytes"))
      for (std::size_t j = 0; j < m->size(); ++j) {
        const Bytes b = m->at(j).as_bytes();
        if (b.count() <= 0) m->at(j).fail("a memory-bound kernel moves more than 0 bytes");
        k.kernels.memory_bytes.push_back(b);
      }
    if (auto h = s.find("host_per_kernel")) {
      k.kernels.host_per_kernel = h->as_time();
      if (k.kernels.host_per_kernel < Time::zero() || k.kernels.host_per_kernel > Time::s(1))
        h->fail("host work per kernel is between 0 and 1 s");
    }
    if (k.kernels.gemms.empty() && k.kernels.attention.empty() && k.kernels.memory_bytes.empty())
      s.fail("a kernel set needs \"gemms\", \"attention\" or \"memory_bytes\"");
    // Its totals are a task's flops and bytes: within what a task may state.
    if (!(k.kernels.flops() <= 1e30)) s.fail("the set's GEMMs do more than 1e30 FLOPs");
    double bytes = 0;
    for (Bytes b : k.kernels.memory_bytes) bytes += static_cast<double>(b.count());
    if (bytes > 1e18) s.fail("the set's memory-bound kernels move more than 10^18 bytes");
    out.push_back(std::move(k));
  }
  return out;
}

Json kernel_sets_to_json(const std::vector<KernelSet>& sets) {
  Json out = Json::array();
  for (const KernelSet& k : sets) {
    Json gemms = Json::array();
    for (const KernelList::Gemm& g : k.kernels.gemms) {
      gemms.push_back(Json::array({g.m, g.n, g.k, g.batch}));
      if (g.fp8) gemms.back().push_back("fp8");
    }
    Json bytes = Json::array();
    for (Bytes b : k.kernels.memory_bytes) bytes.push_back(exact_string(b));
    out.push_back(Json{{"name", k.name},
                       {"dtype", std::string(to_string(k.kernels.dtype))},
                       {"gemms", std::move(gemms)},
                       {"memory_bytes", std::move(bytes)}});
    if (!k.kernels.attention.empty()) {
      Json attention = Json::array();
      for (const KernelList::Attention& a : k.kernels.attention)
        attention.push_back(Json{{"batch", a.batch},
                                 {"queries", a.queries},
                                 {"keys", a.keys},
                                 {"head_dim", a.head_dim},
                                 {"pass", a.backward ? "backward" : "forward"}});
      out.back()["attention"] = std::move(attention);
    }
    if (k.kernels.host_per_kernel > Time::zero())
      out.back()["host_per_kernel"] = exact_string(k.kernels.host_per_kernel);
  }
  return out;
}

}  // namespace meshsim::plan
