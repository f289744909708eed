#include "tools/cli/trace_option.h"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "tools/cli/output.h"

namespace meshsim::cli {

namespace {
// Plans with at least this many task slices get a progress line.
constexpr std::size_t kLargeTrace = 200'000;
}  // namespace

void TraceDetailOption::add_to(CLI::App& cmd) {
  cmd.add_option("--trace-detail", name,
                 "What the trace shows: tasks (default: every task on every device it involves, every "
                 "loaded link), streams (every task once, on its first device; only links between hosts) or "
                 "hosts (per host: GPUs computing, GPUs communicating, network egress). For 1,000+ GPUs "
                 "use streams or hosts")
      ->check(CLI::IsMember(traces::kTraceDetailNames.names()));
}

traces::TraceDetail TraceDetailOption::value() const {
  return *traces::kTraceDetailNames.parse(name);
}

std::vector<traces::LinkUtilisation> link_utilisation(const sim::SimResult& r) {
  std::vector<traces::LinkUtilisation> links;
  if (r.link_timeline.size() != r.link_bytes.size()) return links;
  for (topology::DirLinkId l = 0; l < r.link_timeline.size(); ++l) {
    if (r.link_bytes[l] <= 0) continue;
    traces::LinkUtilisation u{l, {}};
    for (const auto& pt : r.link_timeline[l])
      u.steps.emplace_back(pt.at, pt.bytes_per_second / r.link_capacity[l]);
    links.push_back(std::move(u));
  }
  return links;
}

void write_trace(const std::string& path, traces::TraceDetail detail, const plan::Plan& plan,
                 const topology::Topology& topo, const plan::Timeline& tl,
                 const std::vector<traces::LinkUtilisation>& links,
                 const std::vector<traces::HostGroup>& groups) {
  std::size_t slices = 0;
  for (const auto& t : plan.tasks) slices += t.devices.size();
  const bool large = slices >= kLargeTrace;
  const std::string_view detail_name = traces::kTraceDetailNames.name(detail);
  if (large)
    fmt::print(stderr, "writing trace {} ({} detail, {} tasks)...\n", path, detail_name, plan.tasks.size());
  const auto began = std::chrono::steady_clock::now();
  std::size_t events = 0;
  write_file(path, [&](std::ostream& out) {
    events = traces::write_chrome_trace(out, plan, topo, tl, links, detail, groups);
  });
  if (!large) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const double mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  fmt::print(stderr, "wrote {}: {} events, {:.0f} MB in {:.1f} s{}\n", path, events, mb, seconds,
             detail == traces::TraceDetail::tasks && mb > 100
                 ? " (--trace-detail streams or hosts writes less)"
                 : "");
}

void write_trace(const std::string& path, traces::TraceDetail detail, const plan::Plan& plan,
                 const topology::Topology& topo, const sim::SimResult& r) {
  write_trace(path, detail, plan, topo, r.timeline(), link_utilisation(r));
}

}  // namespace meshsim::cli
