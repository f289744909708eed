#include "sim/kernel/maxmin.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/kernel/numeric.h"

namespace meshsim::sim::kernel {

namespace {

double weight(const MaxMinFlow& f, std::size_t k) {
  return f.weights.empty() ? 1.0 : f.weights[k];
}

// The progressive filling of the header, over per-link flow lists.
class Filling {
 public:
  explicit Filling(const MaxMinProblem& p)
      : p_(p),
        on_(p.capacity.size()),
        rem_(p.capacity),
        wsum_(p.capacity.size(), 0.0),
        unfrozen_(p.capacity.size(), 0),
        rate_(p.flows.size(), -1.0),
        bottleneck_(p.flows.size(), MaxMinSolution::kFrozenAtCap) {
    for (std::size_t f = 0; f < p.flows.size(); ++f) {
      const MaxMinFlow& fl = p.flows[f];
      MESHSIM_ASSERT(fl.weights.empty() || fl.weights.size() == fl.links.size(), "one weight per link");
      MESHSIM_ASSERT(!fl.links.empty() || fl.cap > 0, "a flow crosses a link or has a cap");
      for (std::size_t k = 0; k < fl.links.size(); ++k) {
        const std::uint32_t l = fl.links[k];
        MESHSIM_ASSERT(l < p.capacity.size(), "a flow's link exists");
        on_[l].push_back({static_cast<std::uint32_t>(f), weight(fl, k)});
        wsum_[l] += weight(fl, k);
        ++unfrozen_[l];
      }
    }
  }

  MaxMinSolution run() {
    constexpr std::uint64_t kFlow = std::uint64_t{1} << 63;  // heap tag: kFlow | flow, else a link
    for (std::size_t l = 0; l < on_.size(); ++l)
      if (unfrozen_[l] > 0) heap_.push({rem_[l] / wsum_[l], l});
    for (std::size_t f = 0; f < p_.flows.size(); ++f)
      if (p_.flows[f].cap > 0) heap_.push({p_.flows[f].cap, kFlow | f});
    std::size_t left = p_.flows.size();
    while (left > 0 && !heap_.empty()) {
      const auto [key, tag] = heap_.top();
      heap_.pop();
      if ((tag & kFlow) != 0) {
        const std::size_t f = tag & ~kFlow;
        if (rate_[f] < 0) {
          freeze(f, key, MaxMinSolution::kFrozenAtCap);
          --left;
        }
        continue;
      }
      if (unfrozen_[tag] == 0) continue;
      const double share = rem_[tag] / wsum_[tag];
      if (share > key * (1 + kStaleShare)) {
        heap_.push({share, tag});
        continue;
      }
      for (const auto& [f, w] : on_[tag])
        if (rate_[f] < 0) {
          freeze(f, share, static_cast<std::uint32_t>(tag));
          --left;
        }
    }
    MESHSIM_ASSERT(left == 0, "progressive filling left flows without a rate");
    return {std::move(rate_), std::move(bottleneck_)};
  }

 private:
  void freeze(std::size_t f, double level, std::uint32_t at) {
    rate_[f] = level;
    bottleneck_[f] = at;
    const MaxMinFlow& fl = p_.flows[f];
    for (std::size_t k = 0; k < fl.links.size(); ++k) {
      const std::uint32_t l = fl.links[k];
      rem_[l] = std::max(0.0, rem_[l] - weight(fl, k) * level);
      --unfrozen_[l];
      wsum_[l] = unfrozen_[l] == 0 ? 0.0 : std::max(0.0, wsum_[l] - weight(fl, k));
    }
  }

  using Entry = std::pair<double, std::uint64_t>;
  const MaxMinProblem& p_;
  std::vector<std::vector<std::pair<std::uint32_t, double>>> on_;  // per link: (flow, weight)
  std::vector<double> rem_;                                        // capacity not yet given out
  std::vector<double> wsum_;                                       // Σ weights of unfrozen flows
  std::vector<std::uint32_t> unfrozen_;
  std::vector<double> rate_;  // < 0: not frozen yet
  std::vector<std::uint32_t> bottleneck_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
};

}  // namespace

std::vector<double> max_min_rates(const MaxMinProblem& problem) {
  return Filling(problem).run().rate;
}

MaxMinSolution max_min_solve(const MaxMinProblem& problem) {
  return Filling(problem).run();
}

std::optional<std::string> check_max_min(const MaxMinProblem& p, const std::vector<double>& rates,
                                         double tolerance) {
  if (rates.size() != p.flows.size())
    return fmt::format("{} rates for {} flows", rates.size(), p.flows.size());
  std::vector<double> used(p.capacity.size(), 0.0);
  std::vector<double> largest(p.capacity.size(), 0.0);
  for (std::size_t f = 0; f < p.flows.size(); ++f) {
    const MaxMinFlow& fl = p.flows[f];
    const double r = rates[f];
    if (!(r >= 0)) return fmt::format("flow {} has rate {}", f, r);
    if (fl.cap > 0 && r > fl.cap * (1 + tolerance))
      return fmt::format("flow {} runs at {}, over its cap {}", f, r, fl.cap);
    for (std::size_t k = 0; k < fl.links.size(); ++k) {
      used[fl.links[k]] += weight(fl, k) * r;
      largest[fl.links[k]] = std::max(largest[fl.links[k]], r);
    }
  }
  for (std::size_t l = 0; l < p.capacity.size(); ++l)
    if (used[l] > p.capacity[l] * (1 + tolerance))
      return fmt::format("link {} carries {}, over its capacity {}", l, used[l], p.capacity[l]);
  for (std::size_t f = 0; f < p.flows.size(); ++f) {
    const MaxMinFlow& fl = p.flows[f];
    const double r = rates[f];
    if (fl.cap > 0 && r >= fl.cap * (1 - tolerance)) continue;
    const bool bottleneck = std::any_of(fl.links.begin(), fl.links.end(), [&](std::uint32_t l) {
      return used[l] >= p.capacity[l] * (1 - tolerance) && r >= largest[l] * (1 - tolerance);
    });
    if (!bottleneck)
      return fmt::format(
          "flow {} (rate {}) is below its cap and crosses no saturated link on which it has the largest rate",
          f, r);
  }
  return std::nullopt;
}

}  // namespace meshsim::sim::kernel
