#pragma once
// Placement: which of a cluster's hosts a job runs on, and the order its
// ranks take them in. Every command lays ranks over "the first GPUs" of
// a topology, host-major; placing a job reorders the topology's hosts so
// that its hosts come first, in rank order, and the others after them in
// index order. Names, links and routes stay as they are: only the order
// in which ranks meet the hosts changes, which is what a scheduler decides.
//
//   contiguous     hosts 0, 1, ..., n − 1: a job alone on an empty cluster
//                  (the default)
//   spread         n hosts evenly over the H of the cluster, host ⌊k·H/n⌋
//                  for rank-host k: as few per leaf switch as there can be
//   random[:SEED]  n hosts drawn without replacement, in the order drawn:
//                  a shared cluster whose free hosts are scattered (SEED
//                  default 1; the draw is splitmix64's, the same on every
//                  machine)
//   hosts=LIST     the hosts listed, in that order: indices and ranges,
//                  "hosts=8-11,0-3"
//
// With n = H, spread is contiguous and random a shuffle of every host.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/json.h"
#include "topology/topology.h"

namespace meshsim::topology {

enum class PlacementKind : std::uint8_t { contiguous, spread, random, hosts };
inline constexpr EnumNames<PlacementKind, 4> kPlacementKindNames{"placement",
                                                                 {{{PlacementKind::contiguous, "contiguous"},
                                                                   {PlacementKind::spread, "spread"},
                                                                   {PlacementKind::random, "random"},
                                                                   {PlacementKind::hosts, "hosts"}}}};

struct Placement {
  PlacementKind kind = PlacementKind::contiguous;
  std::uint64_t seed = 1;  // random
  std::vector<int> hosts;  // hosts: the list, in rank order

  bool operator==(const Placement&) const = default;
};

/// "contiguous", "spread", "random", "random:7", "hosts=0-3,8"; UsageError
/// naming `text` otherwise.
[[nodiscard]] Placement parse_placement(std::string_view text);
/// A file's "placement" value, checked; ConfigError at its path otherwise.
[[nodiscard]] std::string placement_from_json(const JsonCursor& c);
/// The text parse_placement reads back ("random:7", "hosts=0-3,8").
[[nodiscard]] std::string to_string(const Placement& p);

/// The cluster's host indices a job of `job_hosts` hosts takes, in rank
/// order, among `cluster_hosts`. UsageError when the job needs more hosts
/// than the cluster has, or a list names a host twice, past the cluster,
/// or fewer than the job needs.
[[nodiscard]] std::vector<int> placed_hosts(const Placement& p, int cluster_hosts, int job_hosts);

/// Reorders `t`'s hosts so that the job's (placed_hosts) come first, then
/// the rest in index order; always from the order the hosts were built in,
/// so a topology may be placed again for another job.
void place(Topology& t, const Placement& p, int job_hosts);

/// `t.placement` as to_string writes it ("contiguous" when empty).
[[nodiscard]] std::string placement_of(const Topology& t);

/// Places a job of `job_hosts` hosts by `t.placement` (place) and returns
/// a line saying where it landed (describe_placement), empty when the
/// placement is contiguous.
std::string place_job(Topology& t, int job_hosts);

/// place_job for a job over the GPUs that mesh `selectors` name
/// (topology/mesh.h): its hosts counted up to the last they select, so
/// the selections, made again on the placed topology, name the job's hosts.
std::string place_selected(Topology& t, const std::vector<std::string>& selectors);

/// The hosts a job over `devices` spans, counted up to the last of them
/// (a selection of hosts 0-15 is a job of 16 hosts).
[[nodiscard]] int hosts_through(const Topology& t, const std::vector<NodeId>& devices);

/// The hosts holding `t`'s first `gpus` GPUs (host-major): what a job of
/// that many GPUs takes. UsageError when `t` has fewer GPUs.
[[nodiscard]] int hosts_for_gpus(const Topology& t, std::int64_t gpus);

/// One line for the user about a placed topology's first `job_hosts`
/// hosts: "random:1: h17 h3 h42 h8 ... (16 of 64 hosts)".
[[nodiscard]] std::string describe_placement(const Topology& placed, const Placement& p, int job_hosts);

}  // namespace meshsim::topology
