#pragma once
// What `meshsim topo show` reports about a topology.
//
// Per-GPU figures are per direction:
//   nvlink_line    Σ line rate of the GPU's NVLink links (a cube-mesh GPU:
//                  6 links × 25 GB/s = 150 GB/s; an NVSwitch one with 18 lanes: 18 × 25 = 450 GB/s)
//   nic            the GPU's NIC (Topology::nic_of), its line rate and how
//                  many GPUs of the host share it
// Bisection bandwidth: the maximum flow (per direction) from the GPUs of
// the first half of the hosts to the GPUs of the second half (on a single
// host: first half of its GPUs to the second half), computed on line rates
// and on effective capacities. For the symmetric presets this is the
// bisection of the machine; for an irregular topology it is the bandwidth
// of that one host-major cut.

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/json.h"
#include "topology/topology.h"

namespace meshsim::topology {

struct LinkKindTotals {
  int links = 0;
  int lanes = 0;        // Σ count
  Bandwidth line_rate;  // Σ line rate, per direction
  Bandwidth capacity;   // Σ effective capacity, per direction
};

struct GpuSummary {
  NodeId gpu = 0;
  int nvlink_links = 0;  // lanes
  Bandwidth nvlink_line;
  Bandwidth nvlink_capacity;
  std::optional<NodeId> nic;
  Bandwidth nic_line;  // line rate of the NIC's fabric link(s)
  int nic_shared_by = 0;
};

struct Bisection {
  std::string cut;  // "hosts 0-1 | hosts 2-3" or "h0/gpu0-3 | h0/gpu4-7"
  Bandwidth line_rate;
  Bandwidth capacity;
};

struct TopologySummary {
  std::map<NodeKind, int> nodes_by_kind;
  std::map<LinkKind, LinkKindTotals> links_by_kind;
  std::vector<GpuSummary> gpus;
  std::optional<Bisection> bisection;  // none with fewer than 2 GPUs
};

[[nodiscard]] TopologySummary summarize(const Topology& t);
[[nodiscard]] Json summary_to_json(const Topology& t, const TopologySummary& s);
/// dump_json(summary_to_json(t, s)), written a GPU at a time.
void write_summary_json(const Topology& t, const TopologySummary& s, std::ostream& out);

/// Graphviz text: one cluster per host, edges labelled with kind and rate.
[[nodiscard]] std::string to_dot(const Topology& t);

}  // namespace meshsim::topology
