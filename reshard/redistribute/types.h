#pragma once
// Sharding types on one device mesh and the typed steps that change them
// (Rink, Paszke, Vytiniotis and Schmid, "Memory-efficient array
// redistribution through portable collective communication", 2021).
//
// A mesh has two named axes: axis 0 (rows, |0| = rows) and axis 1 (cols).
// A type is a ShardingSpec: per tensor dimension d, the ordered list of
// mesh axes splitting it, major first (reshard/sharding.h); in Rink's
// notation dimension d has type n{a1,...,ak}N with n·Π|ai| = N. Axes that no
// dimension uses replicate. A type fits a tensor when every dimension
// divides by the product of its axes.
//
// Local size. A device holds Π_d N_d / Π_{d, a in d}|a| elements: the
// local size depends only on the SET U of used axes, L(U) = |tensor| / Π_{a
// in U} |a|.
//
// Steps (each maps a type to a type):
//   slice(d, x)          x unused: append x to d's axes. L ÷ |x|. Local: a
//                        device keeps the sub-box of its tile given by its
//                        coordinate on x; no data moves.
//   all-gather(d, k)     remove the last k axes X of d. L × Π|X|. One
//                        all-gather per group of devices that agree on every
//                        axis outside X (|group| = Π|X|).
//   all-to-all(d→e, x)   x is d's last axis: move it to the end of e's list.
//                        L unchanged. One all-to-all per group over x: member
//                        j sends member i the part of its tile that i's new
//                        tile holds.
//   permute              any change that keeps every dimension's shard count
//                        (so every new tile IS a tile of the old type, on the
//                        same grid): each device receives its whole new tile
//                        from a device that holds it, or keeps it when it
//                        already does. L unchanged.
//   exchange             any change at all, done directly (an all-to-all-v):
//                        each device receives every piece of its new tile
//                        that it lacks from a device that holds it, and
//                        copies the piece it holds locally. Not one of
//                        Rink's steps; it moves the least data a change
//                        can, and holds input + output like the others.
//   move                 from the source mesh to a destination mesh that is
//                        not the same (problems between two overlapping
//                        meshes): an exchange whose new tiles are the
//                        destination mesh's; a device on both meshes copies
//                        what it holds locally.

#include <cstdint>
#include <string>
#include <vector>

#include "reshard/sharding.h"

namespace meshsim::reshard::redistribute {

/// The mesh's axis sizes: {rows, cols}.
struct Axes {
  int rows = 1;
  int cols = 1;
  [[nodiscard]] int size(int axis) const { return axis == 0 ? rows : cols; }
  [[nodiscard]] int coord(int axis, std::size_t device) const {  // row-major device index
    const auto c = static_cast<int>(device % static_cast<std::size_t>(cols));
    const auto r = static_cast<int>(device / static_cast<std::size_t>(cols));
    return axis == 0 ? r : c;
  }
  [[nodiscard]] std::size_t devices() const {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  }
};

/// Whether every dimension of `shape` divides by its axes' product.
[[nodiscard]] bool fits(const std::vector<std::int64_t>& shape, const ShardingSpec& type, const Axes& axes);
/// Elements one device holds (the type must fit).
[[nodiscard]] std::int64_t local_elements(const std::vector<std::int64_t>& shape, const ShardingSpec& type,
                                          const Axes& axes);
/// Per dimension, how many shards the type cuts it into.
[[nodiscard]] std::vector<std::int64_t> shard_counts(const ShardingSpec& type, const Axes& axes);
/// The tile of row-major device `device` (reshard::tile).
[[nodiscard]] Box device_tile(const std::vector<std::int64_t>& shape, const ShardingSpec& type,
                              const Axes& axes, std::size_t device);

/// Every type that fits `shape` on `axes` (axes of size 1 are never used), in a
/// fixed order.
[[nodiscard]] std::vector<ShardingSpec> all_types(const std::vector<std::int64_t>& shape, const Axes& axes);

enum class StepKind { slice, all_gather, all_to_all, permute, exchange, move };
[[nodiscard]] std::string_view to_string(StepKind k);

struct Step {
  StepKind kind = StepKind::slice;
  int dim = -1;     // slice, all-gather, all-to-all: the dimension it changes (the source, for all-to-all)
  int to_dim = -1;  // all-to-all: the dimension the axis moves to
  std::vector<int> axes;  // the axes it adds, removes or moves (slice, all-gather, all-to-all)
  ShardingSpec after;     // the type it produces
  [[nodiscard]] bool moves_data() const { return kind != StepKind::slice; }
  [[nodiscard]] std::string str() const;  // "all-gather dim 0 over axis 1 -> S0 R"
};

/// The steps that lead from `from` to another type of `types` (all fitting);
/// with `exchange`, also an exchange to every type no other step reaches.
[[nodiscard]] std::vector<Step> next_steps(const ShardingSpec& from, const std::vector<ShardingSpec>& types,
                                           const Axes& axes, bool exchange = false);

/// The groups a step's collectives run over: the row-major device indices
/// that agree on every axis outside `over`, each group ordered by the
/// mixed-radix value of its coordinates on `over` (first axis major).
[[nodiscard]] std::vector<std::vector<std::size_t>> axis_groups(const Axes& axes,
                                                                const std::vector<int>& over);

}  // namespace meshsim::reshard::redistribute
