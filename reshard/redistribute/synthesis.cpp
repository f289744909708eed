// Redistribution synthesis and the XLA-style baseline
// (reshard/redistribute/synthesis.h).

#include "reshard/redistribute/synthesis.h"

#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/unit_strings.h"
#include "sim/executor.h"
#include "sim/nic_traffic.h"

namespace meshsim::reshard::redistribute {

StepTimer::StepTimer(const topology::Topology& t, const Problem& p) : topo_(t), base_(p) {}

bool StepTimer::serves(const Problem& p) const {
  return p.mesh.devices == base_.mesh.devices && p.mesh.rows == base_.mesh.rows &&
         p.dst_mesh.devices == base_.dst_mesh.devices && p.dst_mesh.rows == base_.dst_mesh.rows &&
         p.tensor.shape == base_.tensor.shape && p.tensor.dtype == base_.tensor.dtype;
}

StepTimer::Cost StepTimer::cost(bool dst_side, const ShardingSpec& from, const Step& s) {
  if (!s.moves_data()) return {};
  const std::string key = fmt::format("{} {} | {}", dst_side ? "dst" : "src", from.str(), s.str());
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  Problem q = base_;
  if (dst_side) {  // a problem on the destination mesh alone
    q.mesh = q.dst_mesh;
    q.axes = q.dst_axes;
  } else if (s.kind != StepKind::move) {  // on the source mesh alone
    q.dst_mesh = q.mesh;
    q.dst_axes = q.axes;
  }
  q.src = from;
  ++simulations_;
  const sim::SimResult r = sim::simulate(emit(topo_, q, {s}, false).plan, topo_);
  const Cost c{r.makespan, sim::nic_traffic(topo_, r).network_bytes};
  cache_.emplace(key, c);
  return c;
}

std::vector<StepTimer::Cost> StepTimer::costs(const ShardingSpec& from, const std::vector<Step>& steps) {
  std::vector<Cost> out;
  ShardingSpec at = from;
  bool dst_side = false;
  for (const Step& s : steps) {
    out.push_back(cost(dst_side, at, s));
    dst_side = dst_side || s.kind == StepKind::move;
    at = s.after;
  }
  return out;
}

double StepTimer::network_bytes(const ShardingSpec& from, const std::vector<Step>& steps) {
  double total = 0;
  for (const Cost& c : costs(from, steps)) total += c.network_bytes;
  return total;
}

namespace {

// The search's state: a type and the elements of the buffer a device
// holds; a label: one way to reach a state.
struct State {
  bool dst_side = false;  // after a move
  std::size_t type = 0;   // index into the side's types
  std::int64_t held = 0;
  auto operator<=>(const State&) const = default;
};
struct Label {
  State at;
  Time time;
  double bytes = 0;  // into the fabric so far
  std::size_t steps = 0;
  std::optional<std::size_t> prev;  // label index
  Step step;
};

}  // namespace

namespace {

// The types of each side and the steps between them.
class Space {
 public:
  Space(const Problem& p, bool exchange)
      : p_(p),
        exchange_(exchange),
        types_{all_types(p.tensor.shape, p.axes), all_types(p.tensor.shape, p.dst_axes)} {}
  [[nodiscard]] const ShardingSpec& type(const State& s) const { return types_[s.dst_side][s.type]; }
  [[nodiscard]] std::int64_t local(bool dst_side, const ShardingSpec& t) const {
    return local_elements(p_.tensor.shape, t, dst_side ? p_.dst_axes : p_.axes);
  }
  [[nodiscard]] State state(bool dst_side, const ShardingSpec& t, std::int64_t held) const {
    const auto& types = types_[dst_side];
    for (std::size_t i = 0; i < types.size(); ++i)
      if (types[i].dims == t.dims) return State{dst_side, i, held};
    MESHSIM_ASSERT(false, "every fitting type is enumerated");
    return {};
  }
  // The steps from `at`: those on its mesh, and moves to the destination
  // mesh when it is another one.
  [[nodiscard]] std::vector<std::pair<Step, State>> edges(const State& at) const {
    std::vector<std::pair<Step, State>> out;
    const auto& types = types_[at.dst_side];
    for (Step& s : next_steps(types[at.type], types, at.dst_side ? p_.dst_axes : p_.axes, exchange_)) {
      const std::int64_t held = s.moves_data() ? local(at.dst_side, s.after) : at.held;
      State to = state(at.dst_side, s.after, held);
      out.emplace_back(std::move(s), to);
    }
    if (at.dst_side || p_.one_mesh()) return out;
    for (const ShardingSpec& t : types_[1])
      out.emplace_back(Step{StepKind::move, -1, -1, {}, t}, state(true, t, local(true, t)));
    return out;
  }

 private:
  const Problem& p_;
  bool exchange_;
  std::vector<ShardingSpec> types_[2];
};

std::vector<Step> path_to(const std::vector<Label>& labels, std::size_t li) {
  std::vector<Step> out;
  for (std::optional<std::size_t> l = li; labels[*l].prev; l = labels[*l].prev)
    out.push_back(labels[*l].step);
  return {out.rbegin(), out.rend()};
}

}  // namespace

std::vector<Step> synthesize(const Problem& p, StepTimer& timer, std::optional<Bytes> memory_limit,
                             std::optional<double> network_budget, bool exchange) {
  MESHSIM_ASSERT(timer.serves(p), "the step timer was made for these meshes and tensor");
  const Space space(p, exchange);
  const std::int64_t esize = plan::dtype_size(p.tensor.dtype);
  const std::int64_t src_local = space.local(false, p.src);
  const std::int64_t bound = std::max(src_local, space.local(true, p.dst));
  if (memory_limit && src_local * esize > memory_limit->count())
    throw UsageError(fmt::format("the source tile ({}) alone exceeds the memory limit ({})",
                                 human_string(Bytes(src_local * esize)), human_string(*memory_limit)));
  const State goal = space.state(!p.one_mesh(), p.dst, 0);
  std::vector<Label> labels{
      Label{space.state(false, p.src, src_local), Time::zero(), 0, 0, std::nullopt, Step{}}};
  std::map<State, std::vector<std::size_t>> kept;  // per state, its labels
  kept[labels[0].at].push_back(0);
  using Entry = std::tuple<Time, std::size_t, std::size_t>;  // time, steps, label
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  queue.emplace(Time::zero(), 0, 0);
  const double slack = network_budget ? 1e-9 * *network_budget + 1 : 0;  // float sums
  while (!queue.empty()) {
    const std::size_t li = std::get<2>(queue.top());
    queue.pop();
    const Label here = labels[li];
    if (here.at.dst_side == goal.dst_side && here.at.type == goal.type) return path_to(labels, li);
    for (auto& [s, to] : space.edges(here.at)) {
      if (s.moves_data() && to.held > bound) continue;
      if (s.moves_data() && memory_limit && (here.at.held + to.held) * esize > memory_limit->count())
        continue;
      const auto c = timer.cost(here.at.dst_side, space.type(here.at), s);
      Label next{to, here.time + c.time, here.bytes + c.network_bytes, here.steps + 1, li, std::move(s)};
      if (network_budget && next.bytes > *network_budget + slack) continue;
      auto& at = kept[to];
      const bool beaten = std::any_of(at.begin(), at.end(), [&](std::size_t k) {
        const Label& o = labels[k];
        return std::pair(o.time, o.steps) <= std::pair(next.time, next.steps) &&
               (!network_budget || o.bytes <= next.bytes);
      });
      if (beaten) continue;
      at.push_back(labels.size());
      queue.emplace(next.time, next.steps, labels.size());
      labels.push_back(std::move(next));
    }
  }
  throw UsageError(fmt::format(
      "no sequence of steps takes {} to {} with every buffer within {}{}{}", p.src.str(), p.dst.str(),
      human_string(Bytes(bound * esize)),
      memory_limit ? fmt::format(", the memory limit {}", human_string(*memory_limit)) : std::string(),
      network_budget ? fmt::format(" and at most {} into the fabric",
                                   human_string(Bytes(static_cast<std::int64_t>(*network_budget))))
                     : std::string()));
}

namespace {

// Slices from `from` to `to`, where each dimension's axes in `from` are a
// prefix of its axes in `to`.
void append_slices(ShardingSpec from, const ShardingSpec& to, std::vector<Step>& out) {
  for (std::size_t d = 0; d < to.dims.size(); ++d)
    for (std::size_t k = from.dims[d].size(); k < to.dims[d].size(); ++k) {
      from.dims[d].push_back(to.dims[d][k]);
      out.push_back(Step{StepKind::slice, static_cast<int>(d), -1, {to.dims[d][k]}, from});
    }
}

bool refines(const ShardingSpec& from, const ShardingSpec& to) {
  for (std::size_t d = 0; d < to.dims.size(); ++d) {
    const auto& a = from.dims[d];
    const auto& b = to.dims[d];
    if (a.size() > b.size() || !std::equal(a.begin(), a.end(), b.begin())) return false;
  }
  return true;
}

}  // namespace

std::vector<Step> xla_style(const Problem& p) {
  MESHSIM_ASSERT(p.one_mesh(), "XLA-style reshards within one mesh");
  std::vector<Step> out;
  if (refines(p.src, p.dst)) {
    append_slices(p.src, p.dst, out);
    return out;
  }
  for (Step& s : next_steps(p.src, {p.dst}, p.axes))
    if (s.kind == StepKind::permute || s.kind == StepKind::all_to_all) return {std::move(s)};
  // Partial replication: gather only the axes the destination drops, when
  // it keeps a prefix of every dimension's axes; else replicate fully.
  const ShardingSpec keep =
      refines(p.dst, p.src) ? p.dst : ShardingSpec{std::vector<std::vector<int>>(p.src.dims.size())};
  ShardingSpec at = p.src;
  for (std::size_t d = 0; d < at.dims.size(); ++d) {
    const std::size_t kept = keep.dims[d].size();
    if (at.dims[d].size() == kept) continue;
    Step s{StepKind::all_gather,
           static_cast<int>(d),
           -1,
           {at.dims[d].begin() + static_cast<std::ptrdiff_t>(kept), at.dims[d].end()},
           at};
    s.after.dims[d].resize(kept);
    at = s.after;
    out.push_back(std::move(s));
  }
  append_slices(at, p.dst, out);
  return out;
}

}  // namespace meshsim::reshard::redistribute
