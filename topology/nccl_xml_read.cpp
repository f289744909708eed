#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <sstream>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "topology/nccl_xml_detail.h"
#include "topology/xml_check.h"

namespace meshsim::topology {

namespace {

namespace pt = boost::property_tree;

// Far deeper than any machine's PCIe tree (a handful of bridge levels).
// The XML parser, the property tree and our walk all recurse per level, so
// a hostile file nested a million deep would overflow the stack: the text
// is checked (xml_problem) before it is parsed.
constexpr int kMaxDepth = 64;

// An element of the dump and its XML path, for error messages.
class Element {
 public:
  Element(const pt::ptree& tree, std::string name, std::string path, const std::string& file)
      : tree_(&tree), name_(std::move(name)), path_(std::move(path)), file_(&file) {}

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& message) const { throw ConfigError(*file_, path_, message); }

  [[nodiscard]] std::optional<std::string> attr(const std::string& key) const {
    const auto attrs = tree_->get_child_optional("<xmlattr>");
    if (!attrs) return std::nullopt;
    const auto it = attrs->find(key);
    if (it == attrs->not_found()) return std::nullopt;
    return it->second.data();
  }

  [[nodiscard]] std::string required(const std::string& key) const {
    auto v = attr(key);
    if (!v) fail(fmt::format("missing attribute \"{}\"", key));
    return *v;
  }

  [[nodiscard]] std::optional<std::int64_t> integer(const std::string& key, std::int64_t lo,
                                                    std::int64_t hi) const {
    const auto v = attr(key);
    if (!v) return std::nullopt;
    std::int64_t out = 0;
    const char* end = v->data() + v->size();
    const auto [p, ec] = std::from_chars(v->data(), end, out);
    if (v->empty() || ec == std::errc::invalid_argument || p != end)
      fail(fmt::format("attribute {}=\"{}\" is not an integer", key, *v));
    if (ec == std::errc::result_out_of_range || out < lo || out > hi)
      fail(fmt::format("attribute {}=\"{}\" is out of range ({} to {})", key, *v, lo, hi));
    return out;
  }

  [[nodiscard]] int required_int(const std::string& key, int lo, int hi) const {
    auto v = integer(key, lo, hi);
    if (!v) fail(fmt::format("missing attribute \"{}\"", key));
    return static_cast<int>(*v);
  }

  /// Child elements in document order; the path gets an index only where
  /// an element has same-named siblings ("cpu[1]", but "gpu").
  [[nodiscard]] std::vector<Element> children() const {
    std::map<std::string, int> total;
    for (const auto& [key, sub] : *tree_)
      if (!key.starts_with('<')) ++total[key];
    std::map<std::string, int> seen;
    std::vector<Element> out;
    for (const auto& [key, sub] : *tree_) {
      if (key.starts_with('<')) continue;  // <xmlattr>, comments
      const int i = seen[key]++;
      std::string path =
          total[key] > 1 ? fmt::format("{}/{}[{}]", path_, key, i) : fmt::format("{}/{}", path_, key);
      out.emplace_back(sub, key, std::move(path), *file_);
    }
    return out;
  }

 private:
  const pt::ptree* tree_;
  std::string name_;
  std::string path_;
  const std::string* file_;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// link_speed "16.0 GT/s PCIe" (or "16 GT/s" from kernels up to 5.6) and
// link_width "16" of a pci element: its link to its parent.
PcieHop pcie_hop(const Element& e) {
  PcieHop hop;
  std::string speed = e.required("link_speed");
  const std::string given = speed;
  if (speed.ends_with(" PCIe")) speed.resize(speed.size() - 5);
  if (!speed.empty() && speed != "Unknown") {  // NCCL writes "" when sysfs has no speed
    constexpr std::pair<std::string_view, int> kGens[] = {{"2.5", 1},  {"5", 2},  {"5.0", 2},  {"8", 3},
                                                          {"8.0", 3},  {"16", 4}, {"16.0", 4}, {"32", 5},
                                                          {"32.0", 5}, {"64", 6}, {"64.0", 6}};
    hop.gen = 0;
    if (speed.ends_with(" GT/s")) {
      const std::string_view number(speed.data(), speed.size() - 5);
      for (const auto& [text, gen] : kGens)
        if (number == text) hop.gen = gen;
    }
    if (hop.gen == 0)
      e.fail(
          fmt::format("attribute link_speed=\"{}\" is not a PCIe link speed (expected 2.5, 5.0, 8.0, 16.0, "
                      "32.0 or 64.0 GT/s, e.g. \"16.0 GT/s PCIe\")",
                      given));
  }
  const std::string width = e.required("link_width");
  if (!width.empty()) {  // "" and 0: unknown, x16 as NCCL assumes
    const int w = e.required_int("link_width", 0, 32);
    if (w != 0) {
      if ((w & (w - 1)) != 0)
        e.fail(fmt::format("attribute link_width=\"{}\" is not a PCIe width (1, 2, 4, 8, 16 or 32)", width));
      hop.width = w;
    }
  }
  return hop;
}

// Walks the document into an NcclDump.
class Reader {
 public:
  explicit Reader(NcclDump& dump) : d_(dump) {}

  void read_system(const Element& sys) {
    const int version = sys.required_int("version", 0, 1'000'000);
    if (version != 1)
      sys.fail(fmt::format("version {} is not supported (meshsim reads NCCL's topology format, version 1)",
                           version));
    std::optional<std::pair<std::string, std::string>> host_hash;  // value, path
    for (const Element& c : sys.children()) {
      if (c.name() != "cpu") continue;
      // NCCL fuses the hosts of a multi-node NVLink domain into one dump;
      // each host's cpus carry its host_hash.
      if (auto h = c.attr("host_hash")) {
        if (!host_hash) {
          host_hash.emplace(*h, c.path());
        } else if (lower(*h) != lower(host_hash->first)) {
          c.fail(
              fmt::format("host_hash {} differs from {} of {}: the dump describes several hosts "
                          "(multi-node NVLink); meshsim imports one host per dump",
                          *h, host_hash->first, host_hash->second));
        }
      }
      read_cpu(c);
    }
  }

 private:
  int add_place(Place p) {
    d_.places.push_back(p);
    return static_cast<int>(d_.places.size()) - 1;
  }

  void read_cpu(const Element& cpu) {
    const int index = static_cast<int>(d_.cpus.size());
    const int place = add_place(Place{-1, index, {}, false, 0});
    d_.cpus.push_back(CpuEntry{cpu.attr("arch").value_or(""), cpu.attr("vendor").value_or(""), place});
    for (const Element& c : cpu.children()) {
      if (c.name() == "pci") {
        read_pci(c, place);
      } else if (c.name() == "nic") {
        read_nic(c, place, PcieHop{});  // no PCIe path known: NCCL's default Gen3 x16
      } else if (c.name() == "gpu") {
        c.fail("a <gpu> belongs inside the <pci> element of its PCIe device, not directly in a <cpu>");
      }
    }
  }

  void read_pci(const Element& pci, int parent) {
    const auto children = pci.children();
    auto count = [&](std::string_view name) {
      return std::count_if(children.begin(), children.end(),
                           [&](const Element& e) { return e.name() == name; });
    };
    const auto n_pci = count("pci");
    const auto n_gpu = count("gpu");
    const auto n_nic = count("nic");
    if (n_pci + n_gpu + n_nic == 0) return;  // nothing meshsim models below it
    const PcieHop hop = pcie_hop(pci);
    if (n_pci > 0 && n_gpu + n_nic > 0)
      pci.fail(
          "holds both <pci> children and a <gpu> or <nic>; a device sits alone in its own <pci> element");
    if (n_gpu > 0 && n_nic > 0) pci.fail("holds both a <gpu> and a <nic>");
    if (n_gpu > 1)
      pci.fail("holds more than one <gpu> (MLOPart partitions of one GPU), which meshsim does not import");
    if (n_pci > 0) {
      const int place =
          add_place(Place{parent, d_.places[static_cast<std::size_t>(parent)].cpu, hop, false, 0});
      for (const Element& c : children)
        if (c.name() == "pci") read_pci(c, place);
      return;
    }
    for (const Element& c : children) {
      if (c.name() == "gpu") read_gpu(c, lower(pci.required("busid")), parent, hop);
      if (c.name() == "nic") read_nic(c, parent, hop);
    }
  }

  void read_gpu(const Element& e, std::string busid, int place, PcieHop hop) {
    GpuEntry g;
    g.path = e.path();
    g.dev = e.required_int("dev", 0, 1'000'000);
    g.sm = e.required_int("sm", 1, 10'000);
    g.busid = std::move(busid);
    g.place = place;
    g.link = hop;
    for (const Element& c : e.children()) {
      if (c.name() == "nvlink") {
        NvlinkRef r;
        r.path = c.path();
        r.count = c.required_int("count", 1, kMaxLanes);
        const std::string tclass = lower(c.required("tclass"));
        const bool hex = tclass.size() > 2 && tclass.starts_with("0x") &&
                         std::all_of(tclass.begin() + 2, tclass.end(), [](char ch) {
                           return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
                         });
        if (!hex)
          c.fail(fmt::format(
              "attribute tclass=\"{}\" is not a PCI class (e.g. 0x068000 NVSwitch, 0x030200 GPU)", tclass));
        // NCCL's reading: a prefix match on the class; what is neither a GPU
        // nor the CPU is taken for an NVSwitch.
        if (tclass.starts_with("0x03")) {
          r.kind = PeerKind::gpu;
          r.target = lower(c.required("target"));
        } else if (tclass.starts_with("0x068001")) {
          r.kind = PeerKind::cpu;
        } else {
          r.kind = PeerKind::nvswitch;
        }
        g.nvlinks.push_back(std::move(r));
      } else if (c.name() == "c2c") {
        const int count = c.required_int("count", 1, kMaxLanes);
        // bw is MB/s per link (NVML); at most the 100 Tb/s lane limit.
        const int mbps = c.required_int("bw", 1, 12'500'000);
        g.c2c.push_back(C2cRef{count, Bandwidth::bytes_per_second(std::int64_t{mbps} * 1'000'000)});
      }
    }
    d_.gpus.push_back(std::move(g));
  }

  void read_nic(const Element& e, int place, PcieHop hop) {
    for (const Element& c : e.children()) {
      if (c.name() != "net") continue;
      NicEntry n;
      n.path = c.path();
      n.dev = c.integer("dev", 0, 1'000'000);
      n.name = c.attr("name").value_or("");
      // Mb/s; NCCL reads it as an int and takes <= 0 (some NICs say -1) as unknown.
      n.speed_mbps = c.integer("speed", INT32_MIN, INT32_MAX);
      n.place = place;
      n.link = hop;
      d_.nics.push_back(std::move(n));
    }
  }

  NcclDump& d_;
};

}  // namespace

NcclDump read_nccl_dump(std::string_view xml, const std::string& file) {
  if (const auto problem = xml_problem(xml, kMaxDepth)) throw ConfigError(file, "", *problem);
  pt::ptree doc;
  try {
    std::istringstream in{std::string(xml)};
    pt::read_xml(in, doc, pt::xml_parser::no_comments);
  } catch (const pt::xml_parser_error& e) {
    throw ConfigError(file, "", fmt::format("not valid XML at line {}: {}", e.line(), e.message()));
  } catch (const pt::ptree_error& e) {
    throw ConfigError(file, "", fmt::format("not valid XML: {}", e.what()));
  }
  const auto system = doc.get_child_optional("system");
  if (!system)
    throw ConfigError(file, "",
                      "no <system> element: not an NCCL topology dump (the XML NCCL writes to "
                      "NCCL_TOPO_DUMP_FILE)");
  NcclDump dump;
  Reader(dump).read_system(Element(*system, "system", "system", file));
  return dump;
}

}  // namespace meshsim::topology
