#include "reshard/redistribute/types.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace meshsim::reshard::redistribute {

std::vector<std::int64_t> shard_counts(const ShardingSpec& type, const Axes& axes) {
  std::vector<std::int64_t> out;
  for (const auto& list : type.dims) {
    std::int64_t n = 1;
    for (int a : list) n *= axes.size(a);
    out.push_back(n);
  }
  return out;
}

bool fits(const std::vector<std::int64_t>& shape, const ShardingSpec& type, const Axes& axes) {
  const auto counts = shard_counts(type, axes);
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] % counts[d] != 0) return false;
  return true;
}

std::int64_t local_elements(const std::vector<std::int64_t>& shape, const ShardingSpec& type,
                            const Axes& axes) {
  const auto counts = shard_counts(type, axes);
  std::int64_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) n *= shape[d] / counts[d];
  return n;
}

Box device_tile(const std::vector<std::int64_t>& shape, const ShardingSpec& type, const Axes& axes,
                std::size_t device) {
  return tile(shape, type, axes.rows, axes.cols, axes.coord(0, device), axes.coord(1, device));
}

std::vector<ShardingSpec> all_types(const std::vector<std::int64_t>& shape, const Axes& axes) {
  const auto rank = static_cast<int>(shape.size());
  std::vector<ShardingSpec> out;
  // Axis 0 in dimension a0 (-1: unused), axis 1 in a1; both in one
  // dimension: both orders.
  for (int a0 = -1; a0 < rank; ++a0) {
    if (a0 >= 0 && axes.rows == 1) continue;
    for (int a1 = -1; a1 < rank; ++a1) {
      if (a1 >= 0 && axes.cols == 1) continue;
      for (int order = 0; order < (a0 >= 0 && a0 == a1 ? 2 : 1); ++order) {
        ShardingSpec s;
        s.dims.resize(shape.size());
        if (order == 0) {
          if (a0 >= 0) s.dims[static_cast<std::size_t>(a0)].push_back(0);
          if (a1 >= 0) s.dims[static_cast<std::size_t>(a1)].push_back(1);
        } else {
          s.dims[static_cast<std::size_t>(a0)] = {1, 0};
        }
        if (fits(shape, s, axes)) out.push_back(std::move(s));
      }
    }
  }
  return out;
}

std::string_view to_string(StepKind k) {
  switch (k) {
    case StepKind::slice: return "dynamic-slice";
    case StepKind::all_gather: return "all-gather";
    case StepKind::all_to_all: return "all-to-all";
    case StepKind::permute: return "permute";
    case StepKind::exchange: return "exchange";
    case StepKind::move: return "move";
  }
  return "?";
}

std::string Step::str() const {
  std::string axes_list;
  for (int a : axes) axes_list += fmt::format("{}{}", axes_list.empty() ? "" : ",", a);
  switch (kind) {
    case StepKind::slice:
      return fmt::format("dynamic-slice dim {} by axis {} -> {}", dim, axes_list, after.str());
    case StepKind::all_gather:
      return fmt::format("all-gather dim {} over axis {} -> {}", dim, axes_list, after.str());
    case StepKind::all_to_all:
      return fmt::format("all-to-all dim {} -> dim {} over axis {} -> {}", dim, to_dim, axes_list,
                         after.str());
    case StepKind::permute: return fmt::format("permute -> {}", after.str());
    case StepKind::exchange: return fmt::format("exchange -> {}", after.str());
    case StepKind::move: return fmt::format("move to the destination mesh -> {}", after.str());
  }
  return "?";
}

std::vector<Step> next_steps(const ShardingSpec& from, const std::vector<ShardingSpec>& types,
                             const Axes& axes, bool exchange) {
  std::vector<Step> out;
  const auto rank = static_cast<int>(from.dims.size());
  const auto is_type = [&](const ShardingSpec& s) {
    return std::any_of(types.begin(), types.end(), [&](const ShardingSpec& t) { return t.dims == s.dims; });
  };
  bool used[2] = {false, false};
  for (const auto& list : from.dims)
    for (int a : list) used[a] = true;
  for (int x = 0; x < 2; ++x) {
    if (used[x] || axes.size(x) == 1) continue;
    for (int d = 0; d < rank; ++d) {
      Step s{StepKind::slice, d, -1, {x}, from};
      s.after.dims[static_cast<std::size_t>(d)].push_back(x);
      if (is_type(s.after)) out.push_back(std::move(s));
    }
  }
  for (int d = 0; d < rank; ++d) {
    const auto& list = from.dims[static_cast<std::size_t>(d)];
    for (std::size_t k = 1; k <= list.size(); ++k) {
      Step s{StepKind::all_gather, d, -1, {list.end() - static_cast<std::ptrdiff_t>(k), list.end()}, from};
      s.after.dims[static_cast<std::size_t>(d)].resize(list.size() - k);
      out.push_back(std::move(s));
    }
    if (list.empty()) continue;
    for (int e = 0; e < rank; ++e) {
      if (e == d) continue;
      Step s{StepKind::all_to_all, d, e, {list.back()}, from};
      s.after.dims[static_cast<std::size_t>(d)].pop_back();
      s.after.dims[static_cast<std::size_t>(e)].push_back(list.back());
      if (is_type(s.after)) out.push_back(std::move(s));
    }
  }
  const auto counts = shard_counts(from, axes);
  for (const ShardingSpec& t : types)
    if (t.dims != from.dims && shard_counts(t, axes) == counts)
      out.push_back(Step{StepKind::permute, -1, -1, {}, t});
  if (!exchange) return out;
  const std::size_t rink = out.size();
  for (const ShardingSpec& t : types) {
    const bool reached = std::any_of(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(rink),
                                     [&](const Step& s) { return s.after.dims == t.dims; });
    if (t.dims != from.dims && !reached) out.push_back(Step{StepKind::exchange, -1, -1, {}, t});
  }
  return out;
}

std::vector<std::vector<std::size_t>> axis_groups(const Axes& axes, const std::vector<int>& over) {
  std::map<std::pair<int, int>, std::vector<std::pair<int, std::size_t>>> groups;
  std::vector<std::pair<int, int>> order;
  for (std::size_t dev = 0; dev < axes.devices(); ++dev) {
    std::pair<int, int> key{axes.coord(0, dev), axes.coord(1, dev)};
    int radix = 0;
    for (int a : over) {
      radix = radix * axes.size(a) + axes.coord(a, dev);
      (a == 0 ? key.first : key.second) = -1;
    }
    auto [it, added] = groups.try_emplace(key);
    if (added) order.push_back(key);
    it->second.emplace_back(radix, dev);
  }
  std::vector<std::vector<std::size_t>> out;
  for (const auto& key : order) {
    auto members = groups[key];
    std::sort(members.begin(), members.end());
    auto& g = out.emplace_back();
    for (const auto& m : members) g.push_back(m.second);
  }
  return out;
}

}  // namespace meshsim::reshard::redistribute
