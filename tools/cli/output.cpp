#include "tools/cli/output.h"

#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UsageError(fmt::format("cannot write \"{}\"", path));
  out << text;
  if (!out.flush()) throw UsageError(fmt::format("error writing \"{}\"", path));
}

Json simulated_trace(const plan::Plan& plan, const topology::Topology& topo, const sim::SimResult& r) {
  std::vector<traces::LinkUtilisation> links;
  if (r.link_timeline.size() == r.link_bytes.size())
    for (topology::DirLinkId l = 0; l < r.link_timeline.size(); ++l) {
      if (r.link_bytes[l] <= 0) continue;
      traces::LinkUtilisation u{l, {}};
      for (const auto& pt : r.link_timeline[l])
        u.steps.emplace_back(pt.at, pt.bytes_per_second / r.link_capacity[l]);
      links.push_back(std::move(u));
    }
  return traces::chrome_trace(plan, topo, r.timeline(), links);
}

}  // namespace meshsim::cli
