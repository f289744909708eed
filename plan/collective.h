#pragma once
// The collective table: everything meshsim knows about a collective
// operation, per op × algorithm × protocol, written once and read by the
// simulator, the planners, the runtime's NCCL program and the CLI.
//
// Ops (sizes follow nccl-tests: all_reduce the buffer; all_gather the whole
// gathered output; reduce_scatter the whole input; all_to_all all the bytes
// one rank sends, its own share included):
//
//   op              ring steps   bus factor   reduces   NCCL call
//   all_gather      n−1          (n−1)/n      no        ncclAllGather
//   reduce_scatter  n−1          (n−1)/n      yes       ncclReduceScatter
//   all_reduce      2(n−1)       2(n−1)/n     yes       ncclAllReduce
//   all_to_all      1            (n−1)/n      no        ncclSend/ncclRecv pairs
//
// Algorithms, as NCCL runs them (the traffic each puts on the links is built
// by sim/collective_flows.h from the shapes described here):
//   ring       one ring per channel; inside a host the ring follows NVLink,
//              between hosts channel c leaves and enters every host through
//              NIC c ("rail-aligned"): the GPU that ends a host's run hands
//              its data over NVLink to the GPU beside NIC c (PXN). Every ring
//              edge carries steps/n of the data.
//   tree       NCCL's double binary tree between hosts (two trees, each with
//              half the data; a host interior in one is a leaf in the other)
//              and a chain through the GPUs inside each host: a reduce up the
//              trees, then a broadcast down. all_reduce only.
//   nvls       NVLink SHARP (NVSwitch 3, Hopper and later): every GPU's data
//              goes up to the switch, which reduces and multicasts: per GPU
//              (n+1)/n of the data each way, at nvls_efficiency() of the
//              link rate. One host only.
//   nvls_tree  nvls inside each host, then a tree between hosts where each
//              host's GPU g serves 1/g of the data through its own NIC.
//              all_reduce only.
//   direct     a transfer per ordered pair (all_reduce: a reduce-scatter and
//              an all-gather phase of S/n per pair). all_to_all is always
//              direct.
// In-network reduction (NCCL's CollNet, through the SHARP plugin; the
// fabric's switches reduce, so each host sends its partial sum up once and
// receives the total once, whatever the host count). all_reduce only:
//   collnet_direct  per channel, one "head" per host (the GPU beside the
//              channel's NIC): every GPU of the host sends the head its
//              share over NVLink, the head sends the host's sum up the
//              switches' aggregation tree and gets the total back, then
//              sends it to every GPU of the host. At most 8 GPUs per host.
//   collnet_chain  per channel, a chain through the host's GPUs reduces up
//              to the head, the head does the same through the switches,
//              and the chain broadcasts back down.
//   nvls       across hosts on such a fabric (NCCL's multi-node NVLS): NVLS
//              inside each host, and GPU k of every host reduces its 1/g
//              share through the switches.
//
// Protocols (NCCL's): the wire carries more bytes than the data, and each
// step costs a different latency.
//   simple     data as is (wire factor 1); per step a fence and a flag
//   ll128      128-byte lines holding 120 bytes of data (wire 128/120)
//   ll         8-byte words each with a 4-byte flag in 16 bytes (wire 2)
//
// Latency (NCCL's tuning model, src/graph/tuning.cc at v2.28.3):
//   time = base(algo, proto) + Σ over the steps of the hop's latency
//        + wire bytes on the busiest link / its capacity
// with the per-step hop latency from NCCL's table for the hop's transport
// (NVLink, PCIe, network), or the route's own latency when that is larger
// (a 25 µs TCP NIC hop is slower than any table entry). Step counts:
//   ring       steps as above, each on the next edge of the ring: a chunk
//              walks the ring, so Σ = steps × (mean edge latency)
//   tree       2 × (chain of g−1 intra-host hops + ⌈log2 N⌉ network hops)
//   nvls       one NVLink round (+ for nvls_tree 2 × ⌈log2 N⌉ network hops;
//              + one network step across hosts on a reducing fabric)
//   direct     one step per phase, on the slowest pair's route
//   collnet_direct  2 × (one intra-host step + 0.4 µs per other GPU of the
//              host) + one network step (NCCL's "arity" term; the network
//              step is constant in the host count: the switches reduce)
//   collnet_chain   2 × (g−1) intra-host steps + one network step

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_names.h"
#include "core/units.h"

namespace meshsim::plan {

enum class CollectiveOp : std::uint8_t { all_gather, reduce_scatter, all_reduce, all_to_all };
enum class Algorithm : std::uint8_t { ring, tree, nvls, nvls_tree, direct, collnet_direct, collnet_chain };
enum class Protocol : std::uint8_t { ll, ll128, simple };
/// What one step of an algorithm crosses (NCCL's NCCL_HW_NVLINK/PCI/NET).
enum class Transport : std::uint8_t { nvlink, pcie, net };

/// Plan files name ops "all_reduce"; the CLI and nccl-tests "allreduce"
/// (the aliases). Algorithms and protocols have one name each.
inline constexpr EnumNames<CollectiveOp, 8> kOpNames{"collective",
                                                     {{{CollectiveOp::all_gather, "all_gather"},
                                                       {CollectiveOp::reduce_scatter, "reduce_scatter"},
                                                       {CollectiveOp::all_reduce, "all_reduce"},
                                                       {CollectiveOp::all_to_all, "all_to_all"},
                                                       {CollectiveOp::all_gather, "allgather"},
                                                       {CollectiveOp::reduce_scatter, "reducescatter"},
                                                       {CollectiveOp::all_reduce, "allreduce"},
                                                       {CollectiveOp::all_to_all, "alltoall"}}}};
inline constexpr EnumNames<Algorithm, 7> kAlgorithmNames{"algorithm",
                                                         {{{Algorithm::ring, "ring"},
                                                           {Algorithm::tree, "tree"},
                                                           {Algorithm::nvls, "nvls"},
                                                           {Algorithm::nvls_tree, "nvls_tree"},
                                                           {Algorithm::direct, "direct"},
                                                           {Algorithm::collnet_direct, "collnet_direct"},
                                                           {Algorithm::collnet_chain, "collnet_chain"}}}};
inline constexpr EnumNames<Protocol, 3> kProtocolNames{
    "protocol", {{{Protocol::ll, "ll"}, {Protocol::ll128, "ll128"}, {Protocol::simple, "simple"}}}};
inline constexpr EnumNames<Transport, 3> kTransportNames{
    "transport", {{{Transport::nvlink, "nvlink"}, {Transport::pcie, "pcie"}, {Transport::net, "net"}}}};

inline constexpr std::array kOps{CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                                 CollectiveOp::all_reduce, CollectiveOp::all_to_all};
inline constexpr std::array kAlgorithms{Algorithm::ring,         Algorithm::tree,   Algorithm::nvls,
                                        Algorithm::nvls_tree,    Algorithm::direct, Algorithm::collnet_direct,
                                        Algorithm::collnet_chain};
inline constexpr std::array kProtocols{Protocol::ll, Protocol::ll128, Protocol::simple};

struct OpTraits {
  CollectiveOp op;
  std::string_view nccl_call;  // "ncclAllReduce"; all_to_all: send/recv pairs
  bool reduces;                // the destination combines what it receives
};

struct AlgorithmTraits {
  Algorithm algorithm;
  std::string_view nccl_name;  // NCCL_ALGO value: "NVLSTree"; direct: "" (send/recv)
  bool needs_nvls;             // NVSwitch with multicast (Hopper or later) on every host
  bool needs_hosts;            // a group that spans at least two hosts
  bool tuned;                  // NCCL's tuner picks it (direct only when forced, or all_to_all)
  bool tuned_across_hosts;     // ... only for groups that span hosts (tree: a chain inside one)
  bool needs_sharp;            // switches that reduce (SHARP), enabled (topology.h: Topology::sharp)
};

struct ProtocolTraits {
  Protocol protocol;
  std::string_view nccl_name;  // NCCL_PROTO value: "LL128"
  double wire_factor;          // bytes on the wire per byte of data
};

[[nodiscard]] const OpTraits& traits(CollectiveOp op);
[[nodiscard]] const AlgorithmTraits& traits(Algorithm a);
[[nodiscard]] const ProtocolTraits& traits(Protocol p);

[[nodiscard]] std::string_view to_string(CollectiveOp op);  // "all_reduce"
[[nodiscard]] std::string_view to_string(Algorithm a);      // "ring"
[[nodiscard]] std::string_view to_string(Protocol p);       // "simple"
[[nodiscard]] std::string_view to_string(Transport t);      // "nvlink", "pcie", "net"
/// Accepts the plan name or the short name ("all_reduce" or "allreduce").
[[nodiscard]] std::optional<CollectiveOp> op_from(std::string_view s);
[[nodiscard]] std::optional<Algorithm> algorithm_from(std::string_view s);
[[nodiscard]] std::optional<Protocol> protocol_from(std::string_view s);
/// "ring, tree, nvls, nvls_tree, direct" (for messages and --help).
[[nodiscard]] std::string algorithm_names();
[[nodiscard]] std::string protocol_names();
[[nodiscard]] std::string op_names();  // the CLI's names ("allgather, ...")

/// Whether `a` can run `op` at all (tree, nvls_tree and the collnets:
/// all_reduce only; all_to_all: direct only).
[[nodiscard]] bool supports(Algorithm a, CollectiveOp op);

/// Whether `a` runs protocol `p` (all but ring and tree: simple only).
[[nodiscard]] bool supports(Algorithm a, Protocol p);

/// nccl-tests: busbw = algbw × bus_factor (n ranks).
[[nodiscard]] double bus_factor(CollectiveOp op, std::int64_t n);
/// Sequential steps of a ring over n ranks (see the table above).
[[nodiscard]] std::int64_t ring_steps(CollectiveOp op, std::int64_t n);

/// Rounds of a direct collective: all_reduce a reduce-scatter then an
/// all-gather phase, each moving S/n per ordered pair (2); the others 1.
[[nodiscard]] std::int64_t direct_phases(CollectiveOp op);

/// NCCL's latency per other GPU of a host that a collnet_direct head
/// serves in turn (tuning.cc's "arity serialization", 0.4 µs).
inline constexpr Time kCollNetPeerLatency = Time::ns(400);

/// NCCL's base latency of an (algorithm, protocol); zero for direct.
[[nodiscard]] Time base_latency(Algorithm a, Protocol p);
/// NCCL's latency of one step over `t` for (algorithm, protocol).
[[nodiscard]] Time hop_latency(Transport t, Algorithm a, Protocol p);

/// ⌈log2 n⌉ for n ≥ 1 (depth of a binary tree over n hosts).
[[nodiscard]] std::int64_t tree_depth(std::int64_t n);

/// The most one tree channel moves, as data per second (algorithm
/// bandwidth), on GPUs of this model in a tree over `hosts` hosts; zero
/// when unknown. From NCCL's tuning model (tuning.cc v2.28.3,
/// perChMaxTreeBws, a per-channel bus bandwidth, halved as NCCL converts a
/// tree's bus bandwidth to algorithm bandwidth), by the model's
/// architecture in the hardware catalogue: a tree channel is one chain of
/// reduce-and-forward steps, and its kernel sets the pace.
[[nodiscard]] Bandwidth tree_channel_limit(std::string_view gpu_model, std::int64_t hosts);

/// Whether GPUs of this model sit on NVSwitches that reduce and multicast
/// (NVLink SHARP: Hopper's NVSwitch 3 and later).
[[nodiscard]] bool nvls_capable_model(std::string_view gpu_model);
/// The share of NVLink bandwidth NVLS traffic reaches on that GPU's
/// switches (0 where there is no NVLS): its wire bytes are data / this.
[[nodiscard]] double nvls_efficiency(std::string_view gpu_model);
/// The first model of the hardware catalogue that is NVLS-capable, for
/// messages ("... or later").
[[nodiscard]] std::string first_nvls_model();

}  // namespace meshsim::plan
