#include "reshard/reshard.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/memory_limit.h"

namespace meshsim::reshard {

using topology::NodeId;
using topology::Topology;

std::vector<std::pair<Box, std::vector<NodeId>>> replica_groups(const std::vector<std::int64_t>& shape,
                                                                const ShardingSpec& spec,
                                                                const topology::DeviceMesh& m) {
  const std::vector<Box> all = tiles(shape, spec, m.rows, m.cols);
  std::vector<std::pair<Box, std::vector<NodeId>>> groups;
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == all[i]; });
    if (it == groups.end()) {
      groups.push_back({all[i], {}});
      it = groups.end() - 1;
    }
    it->second.push_back(m.devices[i]);
  }
  return groups;
}

namespace {

using Groups = std::vector<std::pair<Box, std::vector<NodeId>>>;

// What a resharding holds per slice (unit task) while every strategy's and
// balancing mode's plan is built and simulated, the fastest with its
// payload: measured at 22-25 KB (`meshsim reshard` of a 65536x65536 f16
// tensor between two meshes of 128 and of 256 DGX-H100, "S0 S1" to
// "S1 S0": 16,384 slices in 403 MB, 65,536 in 1.50 GB), rounded up.
constexpr double kBytesPerSlice = 25'000;

// The slices a resharding cuts the tensor into: per dimension, the pieces
// of the common refinement of both shardings' cuts (each tiling covers the
// dimension), multiplied.
double slice_count(const Groups& src, const Groups& dst) {
  if (src.empty() || dst.empty()) return 0;
  double slices = 1;
  for (std::size_t d = 0; d < src.front().first.size(); ++d) {
    std::vector<std::int64_t> cuts;
    for (const Groups* groups : {&src, &dst})
      for (const auto& g : *groups) cuts.push_back(g.first[d].first);
    std::sort(cuts.begin(), cuts.end());
    slices *= static_cast<double>(std::unique(cuts.begin(), cuts.end()) - cuts.begin());
  }
  return slices;
}

}  // namespace

std::vector<UnitTask> unit_tasks(const ReshardProblem& p) {
  const Groups src = replica_groups(p.tensor.shape, p.src_spec, p.src);
  const Groups dst = replica_groups(p.tensor.shape, p.dst_spec, p.dst);
  const double slices = slice_count(src, dst);
  require_memory(slices * kBytesPerSlice,
                 fmt::format("resharding {} from {} to {} GPUs ({:.0f} slices)", p.tensor.name,
                             p.src.devices.size(), p.dst.devices.size(), slices),
                 "shardings that cut the tensor into fewer slices, or smaller meshes");
  std::vector<UnitTask> out;
  const plan::Tensor& tensor = p.tensor;
  for (const auto& [dbox, receivers] : dst)
    for (const auto& [sbox, senders] : src) {
      Box slice = intersect(dbox, sbox);
      if (slice.empty()) continue;
      const Bytes bytes = plan::box_bytes(tensor, slice);
      UnitTask u{std::move(slice), bytes, senders, {}, {}};
      for (NodeId r : receivers)
        (std::find(senders.begin(), senders.end(), r) != senders.end() ? u.local : u.receivers).push_back(r);
      out.push_back(std::move(u));
    }
  return out;
}

ReshardProblem make_problem(const Topology& t, plan::Tensor tensor, const std::string& src_mesh,
                            const std::string& src_spec, const std::string& dst_mesh,
                            const std::string& dst_spec) {
  ReshardProblem p;
  p.tensor = std::move(tensor);
  p.src = topology::select_mesh(t, src_mesh);
  p.dst = topology::select_mesh(t, dst_mesh);
  p.src_spec = ShardingSpec::parse(src_spec, p.tensor.shape.size());
  p.dst_spec = ShardingSpec::parse(dst_spec, p.tensor.shape.size());
  return p;
}

plan::Tensor parse_tensor_arg(const std::string& text) {
  const auto colon = text.find(':');
  const std::string dims = text.substr(0, colon);
  const std::string type = colon == std::string::npos ? "float32" : text.substr(colon + 1);
  plan::Tensor t{std::string(1, 'x'), {}, plan::DType::f32};  // (g++ 12 warns falsely on = "x")
  std::size_t start = 0;
  double elements = 1;
  while (start <= dims.size()) {
    const auto x = dims.find('x', start);
    const std::string part = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || p != part.data() + part.size() || v < 1 || v > (std::int64_t{1} << 40))
      throw UsageError(fmt::format(
          "tensor \"{}\": \"{}\" is not a dimension size (write e.g. 1024x1024x512:int32)", text, part));
    t.shape.push_back(v);
    elements *= static_cast<double>(v);
    if (elements > plan::kMaxTensorElements)
      throw UsageError(fmt::format("tensor \"{}\": more than 10^15 elements", text));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  if (const auto d = plan::kDTypeNames.parse(type)) {
    t.dtype = *d;
    return t;
  }
  throw UsageError(fmt::format("tensor \"{}\": unknown element type \"{}\" ({}; also {})", text, type,
                               plan::kDTypeNames.list(), fmt::join(plan::kDTypeNames.aliases(), ", ")));
}

double host_fabric_capacity(const Topology& t, int host) {
  double c = 0;
  for (NodeId n : t.host_nics(host))
    for (topology::LinkId l = 0; l < t.link_count(); ++l) {
      const auto& link = t.link(l);
      if (link.kind == topology::LinkKind::network && (link.a == n || link.b == n))
        c += t.capacity(l).bytes_per_second_f();
    }
  return c;
}

LowerBound lower_bound(const Topology& t, const ReshardProblem& p, const std::vector<UnitTask>& tasks) {
  std::map<int, std::int64_t> in;
  std::map<int, std::int64_t> out;
  for (const auto& task : tasks) {
    std::set<int> sender_hosts;
    for (NodeId s : task.senders) sender_hosts.insert(t.node(s).host);
    std::set<int> receiver_hosts;
    for (NodeId r : task.receivers) receiver_hosts.insert(t.node(r).host);
    bool leaves = false;
    for (int h : receiver_hosts)
      if (!sender_hosts.contains(h)) {
        in[h] += task.bytes.count();
        leaves = true;
      }
    if (leaves && sender_hosts.size() == 1) out[*sender_hosts.begin()] += task.bytes.count();
  }
  LowerBound lb;
  double worst = 0;
  auto consider = [&](const std::map<int, std::int64_t>& bytes, const char* dir) {
    for (const auto& [h, n] : bytes) {
      const double cap = host_fabric_capacity(t, h);
      if (cap <= 0) continue;
      const double s = static_cast<double>(n) / cap;
      if (s > worst) {
        worst = s;
        lb.max_host_bytes = Bytes(n);
        lb.bounding_host = fmt::format("{} {}", t.hosts()[static_cast<std::size_t>(h)].name, dir);
      }
    }
  };
  consider(in, "in");
  consider(out, "out");
  if (worst <= 0) return lb;
  Time latency = Time::max();
  for (NodeId s : p.src.devices)
    for (NodeId d : p.dst.devices)
      if (t.node(s).host != t.node(d).host) latency = std::min(latency, t.route(s, d).latency);
  lb.time =
      Time::ps(static_cast<std::int64_t>(worst * 1e12)) + (latency == Time::max() ? Time::zero() : latency);
  return lb;
}

}  // namespace meshsim::reshard
