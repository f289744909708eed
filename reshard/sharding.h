#pragma once
// Sharding specs and tiles (Alpa notation).
//
// A spec gives, per tensor dimension, `R` (not split) or `S` followed by
// the mesh axes that split it, major first: `S0`, `S1`, `S01` (both axes,
// axis 0 major), `S10`. Each mesh axis splits at most one dimension; axes
// not used mean replication along them. On a rows × cols mesh the device at
// (r, c) has coordinate r on axis 0 and c on axis 1; for a dimension of
// size N split by axes a1..ak (shards = Π |ai|), its shard index is the
// mixed-radix number of its coordinates on a1..ak (a1 major), and it holds
// [index·N/shards, (index+1)·N/shards). Splits must divide evenly.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"

namespace meshsim::reshard {

using Box = plan::Box;  // [begin, end) per dimension

struct ShardingSpec {
  std::vector<std::vector<int>> dims;  // per tensor dimension, the splitting mesh axes, major first

  /// Parses "S0 R R", "R S01 R"...; UsageError for malformed specs or
  /// specs whose rank is not `rank`.
  [[nodiscard]] static ShardingSpec parse(std::string_view text, std::size_t rank);
  [[nodiscard]] std::string str() const;
};

/// The tile of the device at (r, c) of a rows × cols mesh. UsageError when
/// a dimension does not split evenly (the message names it).
[[nodiscard]] Box tile(const std::vector<std::int64_t>& shape, const ShardingSpec& spec, int rows, int cols,
                       int r, int c);

/// Every device's tile, row-major over the mesh.
[[nodiscard]] std::vector<Box> tiles(const std::vector<std::int64_t>& shape, const ShardingSpec& spec,
                                     int rows, int cols);

using plan::intersect;                            // empty Box when disjoint
[[nodiscard]] std::int64_t volume(const Box& b);  // 0 for an empty Box
[[nodiscard]] std::string box_str(const Box& b);  // "[0:512, 0:1024]"

}  // namespace meshsim::reshard
