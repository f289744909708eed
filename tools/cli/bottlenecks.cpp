#include "tools/cli/bottlenecks.h"

#include <fmt/format.h>

#include "core/table.h"
#include "core/unit_strings.h"
#include "traces/trace_export.h"

namespace meshsim::cli {

namespace {

std::string_view kind_of(const topology::Topology& t, topology::DirLinkId l) {
  return topology::to_string(t.link(topology::Topology::link_of(l)).kind);
}

}  // namespace

Json bottlenecks_json(const topology::Topology& t, const sim::SimResult& r, std::size_t k) {
  Json out = Json::array();
  for (const auto& l : r.bottlenecks(k))
    out.push_back(Json{{"link", traces::link_name(t, l.link)},
                       {"kind", std::string(kind_of(t, l.link))},
                       {"utilisation", l.utilisation},
                       {"bytes", l.bytes}});
  return out;
}

std::string bottlenecks_table(const topology::Topology& t, const sim::SimResult& r, std::size_t k) {
  const auto links = r.bottlenecks(k);
  if (links.empty()) return {};
  Table tab({"bottleneck links", "kind", "utilisation", "bytes"});
  for (const auto& l : links)
    tab.add({traces::link_name(t, l.link), std::string(kind_of(t, l.link)),
             fmt::format("{:.1f} %", 100.0 * l.utilisation),
             human_string(Bytes(static_cast<std::int64_t>(l.bytes)))});
  return tab.render({false, false, true, true});
}

}  // namespace meshsim::cli
