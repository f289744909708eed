#pragma once
// A redistribution problem on one device mesh, and the Plan of a sequence
// of typed steps (reshard/redistribute/types.h) with what each step costs
// in bytes and memory.
//
// Buffers. Each device starts with its source tile (buffer "src:<dev>").
// A step that moves data writes a new buffer per device holding the tile
// of the type it produces ("s<k>:<dev>"); a permute leaves a device that
// already holds its new tile with the buffer it has. A slice writes
// nothing: the next step reads the sliced sub-box of the buffer in place,
// and a device's result is the sub-box of its last buffer given by its
// destination tile.
//
// Memory model. A redistribution consumes its source: a buffer is freed
// once the step that reads it ends. During a step a device holds the
// buffer it reads and the one it writes; between steps, one buffer. So
//   peak(device) = max(source tile, max over steps of in + out).
// The synthesis (reshard/redistribute/synthesis.h) keeps every buffer at
// most M = max(source tile, destination tile) bytes; then
//   peak <= M + W <= 2M,
// W the largest buffer one step writes. `between_max` reports the largest
// buffer held between steps, the quantity bounded by M.
//
// Lower bound. Cut the tensor into the cells of the common refinement of
// the source and destination grids. A device must receive every cell of
// its destination tile that its source tile lacks, and a host every cell
// that some device of it needs and none of its devices holds; the bound
// is the larger of (bytes into a GPU / the capacity of its links) and
// (bytes into a host / its NICs' capacity), over every GPU and host, plus
// the smallest route latency when anything moves.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"
#include "reshard/redistribute/types.h"
#include "topology/mesh.h"
#include "topology/topology.h"

namespace meshsim::reshard::redistribute {

/// `src` is a type on `mesh`, `dst` on `dst_mesh`: one mesh, or two that
/// share devices (a move step crosses between them).
struct Problem {
  plan::Tensor tensor;
  topology::DeviceMesh mesh;
  Axes axes;
  topology::DeviceMesh dst_mesh;
  Axes dst_axes;
  ShardingSpec src, dst;  // axes of size 1 dropped (they split nothing)
  [[nodiscard]] bool one_mesh() const {
    return mesh.devices == dst_mesh.devices && mesh.rows == dst_mesh.rows;
  }
};

/// UsageError for a bad mesh, spec, or a spec that does not split evenly.
[[nodiscard]] Problem make_problem(const topology::Topology& t, plan::Tensor tensor, std::string_view mesh,
                                   std::string_view src_spec, std::string_view dst_spec);
/// Between two meshes (they may share devices).
[[nodiscard]] Problem make_problem(const topology::Topology& t, plan::Tensor tensor,
                                   std::string_view src_mesh, std::string_view src_spec,
                                   std::string_view dst_mesh, std::string_view dst_spec);

/// The same from parsed parts: drops axes of size 1. The specs must fit
/// (tiles() checks).
[[nodiscard]] Problem problem_on(plan::Tensor tensor, topology::DeviceMesh mesh,
                                 topology::DeviceMesh dst_mesh, const ShardingSpec& src,
                                 const ShardingSpec& dst);

struct StepReport {
  Step step;
  Bytes moved;        // bytes written into another device's buffer
  Bytes cross_host;   // of those, bytes whose source is on another host
  Bytes peak_memory;  // the most one device holds during the step
  Bytes written;      // the largest buffer the step writes (0 for a slice)
};

struct Emission {
  plan::Plan plan;
  std::vector<StepReport> steps;
  Bytes moved, cross_host;  // sums of the steps'
  Bytes peak_memory;        // per device, over the whole run
  Bytes between_max;        // the largest buffer a device holds between steps
  Bytes max_shard;          // M = max(source tile, destination tile)
};

/// The plan of `steps` applied to p.src. Without `payload` it has tasks
/// only (no tensor, buffers or regions): what the simulator needs.
[[nodiscard]] Emission emit(const topology::Topology& t, const Problem& p, const std::vector<Step>& steps,
                            bool payload = true);

struct RedistBound {
  Time time;
  Bytes max_gpu_bytes;   // the most one GPU must receive
  Bytes max_host_bytes;  // the most one host must receive from other hosts
  std::string bounding;  // "h0/gpu3 in" or "h1 in"
};
[[nodiscard]] RedistBound lower_bound(const topology::Topology& t, const Problem& p);

}  // namespace meshsim::reshard::redistribute
