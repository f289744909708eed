#include "reshard/sharding.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::reshard {

ShardingSpec ShardingSpec::parse(std::string_view text, std::size_t rank) {
  ShardingSpec s;
  std::istringstream in{std::string(text)};
  std::string tok;
  bool used[2] = {false, false};
  auto bad = [&](const std::string& why) -> UsageError {
    return UsageError(
        fmt::format("bad sharding spec \"{}\": {} (write one of R, S0, S1, S01, S10 per tensor "
                    "dimension, e.g. \"S0 R R\")",
                    text, why));
  };
  while (in >> tok) {
    std::vector<int> axes;
    if (tok != "R") {
      if (tok.size() < 2 || tok[0] != 'S') throw bad(fmt::format("\"{}\" is not R or S<axes>", tok));
      for (std::size_t i = 1; i < tok.size(); ++i) {
        if (tok[i] != '0' && tok[i] != '1') throw bad(fmt::format("\"{}\": mesh axes are 0 and 1", tok));
        const int a = tok[i] - '0';
        if (std::find(axes.begin(), axes.end(), a) != axes.end())
          throw bad(fmt::format("\"{}\" names mesh axis {} twice", tok, a));
        if (used[a]) throw bad(fmt::format("mesh axis {} splits more than one dimension", a));
        used[a] = true;
        axes.push_back(a);
      }
    }
    s.dims.push_back(std::move(axes));
  }
  if (s.dims.size() != rank)
    throw bad(fmt::format("it has {} dimensions but the tensor has {}", s.dims.size(), rank));
  return s;
}

std::string ShardingSpec::str() const {
  std::string out;
  for (const auto& axes : dims) {
    if (!out.empty()) out += ' ';
    if (axes.empty()) {
      out += 'R';
      continue;
    }
    out += 'S';
    for (int a : axes) out += static_cast<char>('0' + a);
  }
  return out;
}

Box tile(const std::vector<std::int64_t>& shape, const ShardingSpec& spec, int rows, int cols, int r, int c) {
  MESHSIM_ASSERT(spec.dims.size() == shape.size(), "spec rank matches the tensor");
  Box box;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    std::int64_t shards = 1;
    std::int64_t index = 0;
    for (int a : spec.dims[d]) {
      const int size = a == 0 ? rows : cols;
      shards *= size;
      index = index * size + (a == 0 ? r : c);
    }
    if (shape[d] % shards != 0)
      throw UsageError(
          fmt::format("dimension {} of size {} does not split evenly into {} shards (spec {} on a {}x{} "
                      "mesh)",
                      d, shape[d], shards, spec.str(), rows, cols));
    const std::int64_t len = shape[d] / shards;
    box.emplace_back(index * len, (index + 1) * len);
  }
  return box;
}

std::vector<Box> tiles(const std::vector<std::int64_t>& shape, const ShardingSpec& spec, int rows, int cols) {
  std::vector<Box> out;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) out.push_back(tile(shape, spec, rows, cols, r, c));
  return out;
}

std::int64_t volume(const Box& b) {
  if (b.empty()) return 0;
  std::int64_t v = 1;
  for (const auto& [lo, hi] : b) v *= hi - lo;
  return v;
}

std::string box_str(const Box& b) {
  std::string out = "[";
  for (std::size_t d = 0; d < b.size(); ++d)
    out += fmt::format("{}{}:{}", d ? ", " : "", b[d].first, b[d].second);
  return out + "]";
}

}  // namespace meshsim::reshard
