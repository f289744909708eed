#include "plan/collective.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace meshsim::plan {

namespace {

constexpr std::array<OpTraits, 4> kOpTable{{
    {CollectiveOp::all_gather, "ncclAllGather", false},
    {CollectiveOp::reduce_scatter, "ncclReduceScatter", true},
    {CollectiveOp::all_reduce, "ncclAllReduce", true},
    {CollectiveOp::all_to_all, "ncclSend/ncclRecv", false},
}};

constexpr std::array<AlgorithmTraits, 5> kAlgorithmTable{{
    {Algorithm::ring, "Ring", false, false, true, false},
    {Algorithm::tree, "Tree", false, false, true, true},
    {Algorithm::nvls, "NVLS", true, false, true, false},
    {Algorithm::nvls_tree, "NVLSTree", true, true, true, true},
    {Algorithm::direct, "", false, false, false, false},
}};

// LL: an 8-byte line carries 4 bytes of data and a 4-byte flag per 8 bytes
// of payload, i.e. 16 wire bytes per 8 data bytes; LL128: 120 data bytes
// per 128-byte line (NCCL src/device/prims_ll.h, prims_ll128.h).
constexpr std::array<ProtocolTraits, 3> kProtocolTable{{
    {Protocol::ll, "LL", 2.0},
    {Protocol::ll128, "LL128", 128.0 / 120.0},
    {Protocol::simple, "Simple", 1.0},
}};

// NCCL src/graph/tuning.cc at v2.23.4-1 (baseLat, hwLat), in microseconds. Rows: algorithm in
// kAlgorithms order; columns: LL, LL128, Simple. Direct (send/recv) is not in
// NCCL's table: it pays the route's latency only.
constexpr double kBaseLatencyUs[5][3] = {
    {6.6, 14.0, 8.4},  // ring
    {6.8, 14.0, 8.4},  // tree
    {0.0, 0.0, 0.0},   // nvls
    {0.0, 0.0, 0.0},   // nvls_tree
    {0.0, 0.0, 0.0},   // direct
};
constexpr double kHopLatencyUs[3][5][3] = {
    {
        // NVLink
        {0.6, 1.9, 3.4},   // ring
        {0.6, 1.25, 4.0},  // tree
        {0.0, 0.0, 25.0},  // nvls
        {0.0, 0.0, 25.0},  // nvls_tree
        {0.0, 0.0, 0.0},   // direct
    },
    {
        // PCIe
        {1.0, 2.5, 5.7},  // ring
        {1.0, 1.9, 4.0},  // tree
        {0.0, 0.0, 0.0},  // nvls
        {0.0, 0.0, 0.0},  // nvls_tree
        {0.0, 0.0, 0.0},  // direct
    },
    {
        // network
        {2.7, 4.0, 14.0},  // ring
        {5.0, 8.5, 14.0},  // tree
        {0.0, 0.0, 18.0},  // nvls
        {0.0, 0.0, 14.0},  // nvls_tree
        {0.0, 0.0, 0.0},   // direct
    },
};

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
  if (a == Algorithm::tree || a == Algorithm::nvls_tree) return op == CollectiveOp::all_reduce;
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
  return us(kBaseLatencyUs[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)]);
}

Time hop_latency(Transport t, Algorithm a, Protocol p) {
  return us(
      kHopLatencyUs[static_cast<std::size_t>(t)][static_cast<std::size_t>(a)][static_cast<std::size_t>(p)]);
}

std::int64_t tree_depth(std::int64_t n) {
  std::int64_t d = 0;
  while ((std::int64_t{1} << d) < n) ++d;
  return d;
}

Bandwidth tree_channel_limit(std::string_view gpu_model, std::int64_t hosts) {
  // perChMaxTreeBws in GB/s: rows Volta, Ampere, Hopper; columns 1, 2, more hosts.
  static constexpr double kBusGBps[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
  int arch = -1;
  if (gpu_model == "V100") arch = 0;
  if (gpu_model == "A100" || gpu_model == "A100-80GB" || gpu_model == "A800") arch = 1;
  if (nvls_efficiency(gpu_model) > 0 && gpu_model[0] == 'H') arch = 2;
  if (gpu_model == "GH200") arch = 2;
  if (arch < 0) return Bandwidth{};
  const int col = hosts <= 1 ? 0 : hosts == 2 ? 1 : 2;
  const double algbw = kBusGBps[arch][col] / 2 * 1e9;
  return Bandwidth::bytes_per_second(static_cast<std::int64_t>(algbw));
}

// NVLink SHARP needs NVSwitch 3 (Hopper) or later. Efficiency: the share
// of link bandwidth multimem loads and stores reach, from NCCL's tuning
// model (v2.28.3 nvlsEfficiency: Hopper 0.85, Blackwell 0.74).
double nvls_efficiency(std::string_view gpu_model) {
  for (std::string_view m : {"H100", "H200", "H800", "H20", "GH200"})
    if (gpu_model == m) return 0.85;
  for (std::string_view m : {"B100", "B200", "GB200"})
    if (gpu_model == m) return 0.74;
  return 0.0;
}

bool nvls_capable_model(std::string_view gpu_model) {
  return nvls_efficiency(gpu_model) > 0;
}

}  // namespace meshsim::plan
