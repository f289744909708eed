#include "topology/placement.h"

#include <charconv>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/split.h"
#include "topology/cluster.h"
#include "topology/mesh.h"

namespace meshsim::topology {

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(
      fmt::format("bad placement \"{}\": {} (expected contiguous, spread, random, random:SEED or "
                  "hosts=LIST, e.g. hosts=0-3,8)",
                  text, why));
}

// A non-negative integer below 2^31 (hosts) or any 64-bit one (seeds).
template <typename Int>
Int number(std::string_view text, std::string_view s) {
  Int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  bool ok = !s.empty() && ec == std::errc() && p == s.data() + s.size();
  if constexpr (std::is_signed_v<Int>) ok = ok && v >= 0;
  if (!ok) bad(text, fmt::format("\"{}\" is not a non-negative integer", s));
  return v;
}

// The k-th word of the seeded stream (SplitMix64 over seed, seed + γ, ...).
std::uint64_t draw(std::uint64_t seed, std::uint64_t k) {
  return splitmix64(seed + k * 0x9e3779b97f4a7c15ULL);
}

}  // namespace

Placement parse_placement(std::string_view text) {
  Placement p;
  const auto colon = text.find(':');
  const auto eq = text.find('=');
  const std::string_view head = text.substr(0, std::min(colon, eq));
  const auto kind = kPlacementKindNames.parse(head);
  if (!kind) bad(text, fmt::format("unknown kind \"{}\"", head));
  p.kind = *kind;
  if (p.kind == PlacementKind::random && colon != std::string_view::npos)
    p.seed = number<std::uint64_t>(text, text.substr(colon + 1));
  else if (colon != std::string_view::npos)
    bad(text, "only random takes a seed");
  if (p.kind == PlacementKind::hosts) {
    if (eq == std::string_view::npos) bad(text, "hosts needs a list");
    for (std::string_view item : split_commas(text.substr(eq + 1))) {
      const auto dash = item.find('-');
      const int lo = number<int>(text, item.substr(0, dash));
      const int hi = dash == std::string_view::npos ? lo : number<int>(text, item.substr(dash + 1));
      if (hi < lo) bad(text, fmt::format("range \"{}\" is empty", item));
      if (hi >= kMaxHosts)
        bad(text, fmt::format("host {} is past the {} hosts a cluster may have", hi, kMaxHosts));
      for (int h = lo; h <= hi; ++h) p.hosts.push_back(h);
    }
  } else if (eq != std::string_view::npos) {
    bad(text, "only hosts takes a list");
  }
  return p;
}

std::string placement_from_json(const JsonCursor& c) {
  std::string text = c.as_string();
  try {
    (void)parse_placement(text);
  } catch (const UsageError& e) {
    c.fail(e.what());
  }
  return text;
}

std::string to_string(const Placement& p) {
  switch (p.kind) {
    case PlacementKind::random: return fmt::format("random:{}", p.seed);
    case PlacementKind::hosts: {
      std::vector<std::string> items;  // runs of consecutive hosts as ranges
      for (std::size_t i = 0; i < p.hosts.size();) {
        std::size_t j = i;
        while (j + 1 < p.hosts.size() && p.hosts[j + 1] == p.hosts[j] + 1) ++j;
        items.push_back(j == i ? fmt::format("{}", p.hosts[i])
                               : fmt::format("{}-{}", p.hosts[i], p.hosts[j]));
        i = j + 1;
      }
      return fmt::format("hosts={}", fmt::join(items, ","));
    }
    default: return std::string(kPlacementKindNames.name(p.kind));
  }
}

std::vector<int> placed_hosts(const Placement& p, int cluster_hosts, int job_hosts) {
  if (job_hosts > cluster_hosts)
    throw UsageError(fmt::format("the job needs {} hosts and the cluster has {}", job_hosts, cluster_hosts));
  const auto n = static_cast<std::size_t>(job_hosts);
  std::vector<int> out;
  switch (p.kind) {
    case PlacementKind::contiguous:
      for (int k = 0; k < job_hosts; ++k) out.push_back(k);
      break;
    case PlacementKind::spread:
      for (std::int64_t k = 0; k < job_hosts; ++k)
        out.push_back(static_cast<int>(k * cluster_hosts / job_hosts));
      break;
    case PlacementKind::random: {  // Fisher-Yates, stopped after the job's hosts
      std::vector<int> all(static_cast<std::size_t>(cluster_hosts));
      for (int h = 0; h < cluster_hosts; ++h) all[static_cast<std::size_t>(h)] = h;
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t j = k + static_cast<std::size_t>(draw(p.seed, k) % (all.size() - k));
        std::swap(all[k], all[j]);
      }
      out.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
      break;
    }
    case PlacementKind::hosts: {
      std::vector<bool> seen(static_cast<std::size_t>(cluster_hosts), false);
      for (int h : p.hosts) {
        if (h >= cluster_hosts)
          throw UsageError(fmt::format("placement {}: host {} is past the cluster's {} hosts", to_string(p),
                                       h, cluster_hosts));
        if (seen[static_cast<std::size_t>(h)])
          throw UsageError(fmt::format("placement {}: host {} is listed twice", to_string(p), h));
        seen[static_cast<std::size_t>(h)] = true;
      }
      if (p.hosts.size() < n)
        throw UsageError(fmt::format("placement {} lists {} hosts and the job needs {}", to_string(p),
                                     p.hosts.size(), job_hosts));
      out.assign(p.hosts.begin(), p.hosts.begin() + static_cast<std::ptrdiff_t>(n));
      break;
    }
  }
  return out;
}

void place(Topology& t, const Placement& p, int job_hosts) {
  t.restore_host_order();  // placements are of the cluster as built, never of an earlier placement
  if (p.kind == PlacementKind::contiguous) return;
  std::vector<int> order = placed_hosts(p, t.host_count(), job_hosts);
  std::vector<bool> taken(static_cast<std::size_t>(t.host_count()), false);
  for (int h : order) taken[static_cast<std::size_t>(h)] = true;
  for (int h = 0; h < t.host_count(); ++h)
    if (!taken[static_cast<std::size_t>(h)]) order.push_back(h);
  t.reorder_hosts(order);
}

std::string placement_of(const Topology& t) {
  return to_string(t.placement.empty() ? Placement{} : parse_placement(t.placement));
}

std::string place_job(Topology& t, int job_hosts) {
  const Placement p = t.placement.empty() ? Placement{} : parse_placement(t.placement);
  place(t, p, job_hosts);
  if (p.kind == PlacementKind::contiguous) return {};
  return describe_placement(t, p, job_hosts);
}

std::string place_selected(Topology& t, const std::vector<std::string>& selectors) {
  t.restore_host_order();  // the selections name hosts of the cluster as built
  if (t.placement.empty()) return {};
  int hosts = 0;
  for (const std::string& s : selectors) hosts = std::max(hosts, hosts_through(t, select_mesh(t, s).devices));
  return place_job(t, hosts);
}

int hosts_through(const Topology& t, const std::vector<NodeId>& devices) {
  int last = -1;
  for (NodeId d : devices) last = std::max(last, t.node(d).host);
  return last + 1;
}

int hosts_for_gpus(const Topology& t, std::int64_t gpus) {
  std::int64_t have = 0;
  for (int h = 0; h < t.host_count(); ++h) {
    if (have >= gpus) return h;
    have += static_cast<std::int64_t>(t.host_gpus(h).size());
  }
  if (have < gpus) throw UsageError(fmt::format("{} GPUs, but {} has {}", gpus, t.name, have));
  return t.host_count();
}

std::string describe_placement(const Topology& placed, const Placement& p, int job_hosts) {
  constexpr int kShown = 8;
  std::vector<std::string> names;
  for (int h = 0; h < std::min(job_hosts, kShown); ++h)
    names.push_back(placed.hosts()[static_cast<std::size_t>(h)].name);
  return fmt::format("{}: {}{} ({} of {} hosts)", to_string(p), fmt::join(names, " "),
                     job_hosts > kShown ? " ..." : "", job_hosts, placed.host_count());
}

}  // namespace meshsim::topology
