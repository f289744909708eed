#include "plan/collective.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "hardware/gpus.h"

namespace meshsim::plan {

namespace {

// Every table below is keyed by an enum: row i holds the key whose value is
// i, and keyed_in_order proves it at compile time.
template <typename Table, typename Key>
consteval bool keyed_in_order(const Table& table, Key key) {
  for (std::size_t i = 0; i < table.size(); ++i)
    if (static_cast<std::size_t>(key(table[i])) != i) return false;
  return true;
}

constexpr std::array<OpTraits, 4> kOpTable{{
    {CollectiveOp::all_gather, "ncclAllGather", false},
    {CollectiveOp::reduce_scatter, "ncclReduceScatter", true},
    {CollectiveOp::all_reduce, "ncclAllReduce", true},
    {CollectiveOp::all_to_all, "ncclSend/ncclRecv", false},
}};
static_assert(keyed_in_order(kOpTable, [](const OpTraits& r) { return r.op; }));

constexpr std::array<AlgorithmTraits, 7> kAlgorithmTable{{
    {Algorithm::ring, "Ring", false, false, true, false, false},
    {Algorithm::tree, "Tree", false, false, true, true, false},
    {Algorithm::nvls, "NVLS", true, false, true, false, false},
    {Algorithm::nvls_tree, "NVLSTree", true, true, true, true, false},
    {Algorithm::direct, "", false, false, false, false, false},
    {Algorithm::collnet_direct, "CollNetDirect", false, true, true, true, true},
    {Algorithm::collnet_chain, "CollNetChain", false, true, true, true, true},
}};
static_assert(keyed_in_order(kAlgorithmTable, [](const AlgorithmTraits& r) { return r.algorithm; }));

// LL: an 8-byte line carries 4 bytes of data and a 4-byte flag per 8 bytes
// of payload, i.e. 16 wire bytes per 8 data bytes; LL128: 120 data bytes
// per 128-byte line (NCCL src/device/prims_ll.h, prims_ll128.h).
constexpr std::array<ProtocolTraits, 3> kProtocolTable{{
    {Protocol::ll, "LL", 2.0},
    {Protocol::ll128, "LL128", 128.0 / 120.0},
    {Protocol::simple, "Simple", 1.0},
}};
static_assert(keyed_in_order(kProtocolTable, [](const ProtocolTraits& r) { return r.protocol; }));

// NCCL's tuning model, src/graph/tuning.cc at v2.28.3-1 (the one NCCL
// version every figure here is read from): the base latency per algorithm
// (baseLatencies) and the latency per step per transport (hwLatencies), in
// microseconds, by protocol in kProtocolTable's order (LL, LL128, Simple).
// Direct (send/recv) is not in NCCL's table: it pays the route's latency only.
struct LatencyRow {
  Algorithm algorithm;
  std::array<double, 3> us;  // LL, LL128, Simple
};
constexpr std::array<LatencyRow, 7> kBaseLatency{{
    {Algorithm::ring, {6.6, 14.0, 8.4}},
    {Algorithm::tree, {6.8, 14.0, 8.4}},
    {Algorithm::nvls, {0.0, 0.0, 0.0}},
    {Algorithm::nvls_tree, {0.0, 0.0, 0.0}},
    {Algorithm::direct, {0.0, 0.0, 0.0}},
    {Algorithm::collnet_direct, {0.0, 0.0, 0.0}},
    {Algorithm::collnet_chain, {0.0, 0.0, 0.0}},
}};
static_assert(keyed_in_order(kBaseLatency, [](const LatencyRow& r) { return r.algorithm; }));

struct HopLatencyRow {
  Transport transport;
  std::array<LatencyRow, 7> by_algorithm;
};
constexpr std::array<HopLatencyRow, 3> kHopLatency{{
    {Transport::nvlink,
     {{{Algorithm::ring, {0.6, 1.9, 3.4}},
       {Algorithm::tree, {0.6, 1.25, 4.0}},
       {Algorithm::nvls, {0.0, 0.0, 25.0}},
       {Algorithm::nvls_tree, {0.0, 0.0, 25.0}},
       {Algorithm::direct, {0.0, 0.0, 0.0}},
       {Algorithm::collnet_direct, {0.0, 0.0, 3.7}},
       {Algorithm::collnet_chain, {0.0, 0.0, 2.8}}}}},
    {Transport::pcie,
     {{{Algorithm::ring, {1.0, 2.5, 5.7}},
       {Algorithm::tree, {1.0, 1.9, 4.0}},
       {Algorithm::nvls, {0.0, 0.0, 0.0}},
       {Algorithm::nvls_tree, {0.0, 0.0, 0.0}},
       {Algorithm::direct, {0.0, 0.0, 0.0}},
       {Algorithm::collnet_direct, {0.0, 0.0, 3.7}},
       {Algorithm::collnet_chain, {0.0, 0.0, 2.8}}}}},
    {Transport::net,
     {{{Algorithm::ring, {2.7, 4.0, 14.0}},
       {Algorithm::tree, {5.0, 8.5, 14.0}},
       {Algorithm::nvls, {0.0, 0.0, 18.0}},
       {Algorithm::nvls_tree, {0.0, 0.0, 14.0}},
       {Algorithm::direct, {0.0, 0.0, 0.0}},
       {Algorithm::collnet_direct, {0.0, 0.0, 31.0}},
       {Algorithm::collnet_chain, {0.0, 0.0, 30.0}}}}},
}};
static_assert(keyed_in_order(kHopLatency, [](const HopLatencyRow& r) { return r.transport; }));
static_assert(keyed_in_order(kHopLatency[0].by_algorithm, [](const LatencyRow& r) { return r.algorithm; }));
static_assert(keyed_in_order(kHopLatency[1].by_algorithm, [](const LatencyRow& r) { return r.algorithm; }));
static_assert(keyed_in_order(kHopLatency[2].by_algorithm, [](const LatencyRow& r) { return r.algorithm; }));

// Per GPU architecture (hardware/gpu.h, the same tuning.cc): the most one
// tree channel moves as bus bandwidth in GB/s (perChMaxTreeBws), for 1, 2
// and more hosts; and the share of NVLink bandwidth that NVLink SHARP's
// multimem loads and stores reach (nvlsEfficiency; NVSwitch 3, Hopper, and
// later).
struct ArchRow {
  hardware::NcclArch arch;
  std::array<double, 3> tree_bus_GBps;  // 1, 2, more hosts
  double nvls_efficiency;
};
constexpr std::array<ArchRow, hardware::kNcclArchs> kArchTable{{
    {hardware::NcclArch::volta, {26.5, 18.5, 10.0}, 0.0},
    {hardware::NcclArch::ampere, {24.0, 23.6, 17.8}, 0.0},
    {hardware::NcclArch::hopper, {38.7, 41.4, 36.0}, 0.85},
    {hardware::NcclArch::blackwell, {70.0, 42.8, 24.0}, 0.74},
}};
static_assert(keyed_in_order(kArchTable, [](const ArchRow& r) { return r.arch; }));

// The architecture row of a GPU model the catalogue knows.
const ArchRow* arch_row(std::string_view gpu_model) {
  const hardware::GpuSpec* g = hardware::find_gpu(gpu_model);
  return g == nullptr ? nullptr : &kArchTable[static_cast<std::size_t>(g->nccl_arch)];
}

template <typename Table, typename Key>
const auto& row(const Table& table, Key k) {
  const auto i = static_cast<std::size_t>(k);
  MESHSIM_ASSERT(i < table.size(), "collective table key in range");
  return table[i];
}

Time us(double v) {
  return Time::ps(static_cast<std::int64_t>(v * 1e6 + 0.5));
}

std::string join(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

const OpTraits& traits(CollectiveOp op) {
  return row(kOpTable, op);
}
const AlgorithmTraits& traits(Algorithm a) {
  return row(kAlgorithmTable, a);
}
const ProtocolTraits& traits(Protocol p) {
  return row(kProtocolTable, p);
}

std::string_view to_string(CollectiveOp op) {
  return kOpNames.name(op);
}
std::string_view to_string(Algorithm a) {
  return kAlgorithmNames.name(a);
}
std::string_view to_string(Protocol p) {
  return kProtocolNames.name(p);
}
std::string_view to_string(Transport t) {
  return kTransportNames.name(t);
}

std::optional<CollectiveOp> op_from(std::string_view s) {
  return kOpNames.parse(s);
}
std::optional<Algorithm> algorithm_from(std::string_view s) {
  return kAlgorithmNames.parse(s);
}
std::optional<Protocol> protocol_from(std::string_view s) {
  return kProtocolNames.parse(s);
}

std::string algorithm_names() {
  return join(kAlgorithmNames.names());
}
std::string protocol_names() {
  return join(kProtocolNames.names());
}
std::string op_names() {
  return join(kOpNames.aliases());
}

bool supports(Algorithm a, CollectiveOp op) {
  if (op == CollectiveOp::all_to_all) return a == Algorithm::direct;
  if (a == Algorithm::tree || a == Algorithm::nvls_tree || a == Algorithm::collnet_direct ||
      a == Algorithm::collnet_chain)
    return op == CollectiveOp::all_reduce;
  return true;
}

bool supports(Algorithm a, Protocol p) {
  return a == Algorithm::ring || a == Algorithm::tree || p == Protocol::simple;
}

double bus_factor(CollectiveOp op, std::int64_t n) {
  const auto d = static_cast<double>(n);
  return op == CollectiveOp::all_reduce ? 2 * (d - 1) / d : (d - 1) / d;
}

std::int64_t ring_steps(CollectiveOp op, std::int64_t n) {
  switch (op) {
    case CollectiveOp::all_reduce: return 2 * (n - 1);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter: return n - 1;
    case CollectiveOp::all_to_all: return 1;
  }
  return 1;
}

std::int64_t direct_phases(CollectiveOp op) {
  return op == CollectiveOp::all_reduce ? 2 : 1;
}

Time base_latency(Algorithm a, Protocol p) {
  return us(row(kBaseLatency, a).us[static_cast<std::size_t>(p)]);
}

Time hop_latency(Transport t, Algorithm a, Protocol p) {
  return us(row(row(kHopLatency, t).by_algorithm, a).us[static_cast<std::size_t>(p)]);
}

std::int64_t tree_depth(std::int64_t n) {
  std::int64_t d = 0;
  while ((std::int64_t{1} << d) < n) ++d;
  return d;
}

Bandwidth tree_channel_limit(std::string_view gpu_model, std::int64_t hosts) {
  const ArchRow* r = arch_row(gpu_model);
  if (r == nullptr) return Bandwidth{};
  const std::size_t col = hosts <= 1 ? 0 : hosts == 2 ? 1 : 2;
  const double algbw = r->tree_bus_GBps[col] / 2 * 1e9;
  return Bandwidth::bytes_per_second(static_cast<std::int64_t>(algbw));
}

double nvls_efficiency(std::string_view gpu_model) {
  const ArchRow* r = arch_row(gpu_model);
  return r == nullptr ? 0.0 : r->nvls_efficiency;
}

std::string first_nvls_model() {
  for (const hardware::GpuSpec* g : hardware::gpus())
    if (nvls_capable_model(g->name)) return std::string(g->name);
  return "";
}

bool nvls_capable_model(std::string_view gpu_model) {
  return nvls_efficiency(gpu_model) > 0;
}

}  // namespace meshsim::plan
