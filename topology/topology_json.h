#pragma once
// The topology file format, `meshsim.topology/1` (docs/topology-format.md).
//
// Two forms:
//   explicit  {"format", "name", "description", "hosts": [...],
//              "nodes": [...], "links": [...]}
//   cluster   {"format", "name", "cluster": {"host": preset, "hosts": N,
//              "fabric": {...}, "nic_bandwidth", "nic_latency"}}
// A cluster file expands to the explicit form. topology_to_json() writes the
// explicit form with every field spelled out in a fixed order and units
// written exactly, so export → load → export gives the same bytes.

#include <ostream>
#include <string>

#include "core/json.h"
#include "topology/cluster.h"
#include "topology/topology.h"

namespace meshsim::topology {

inline constexpr const char* kTopologyFormat = "meshsim.topology/1";

/// Loads either form; ConfigError naming the file and JSON path on any
/// mistake.
[[nodiscard]] Topology load_topology_file(const std::string& file);
[[nodiscard]] Topology topology_from_json(const Json& j, const std::string& file);

/// Reads the "cluster" object of the compact form.
[[nodiscard]] ClusterSpec cluster_spec_from_json(const JsonCursor& c);

[[nodiscard]] Json topology_to_json(const Topology& t);
/// dump_json(topology_to_json(t)), written a node and a link at a time (a
/// fabric may have millions of links).
void write_topology_json(const Topology& t, std::ostream& out);

}  // namespace meshsim::topology
