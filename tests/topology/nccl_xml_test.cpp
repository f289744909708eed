#include "topology/nccl_xml.h"

#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "tests/topology/test_util.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

using namespace meshsim;
using namespace meshsim::topology;
using namespace meshsim::topology::test;

namespace {

const std::string kDgxH100 = std::string(MESHSIM_SOURCE_DIR) + "/configs/nccl/dgx-h100.xml";
const std::string kP3 = std::string(MESHSIM_SOURCE_DIR) + "/configs/nccl/p3.16xlarge.xml";

Topology import_text(const std::string& xml, const NcclImportOptions& opts = {}) {
  return import_nccl_xml_text(xml, "dump.xml", opts);
}

// A one-CPU dump around the given GPU (and NIC) pci elements.
std::string one_cpu(const std::string& body, const std::string& cpu_attrs = R"(arch="x86_64")") {
  return fmt::format(R"(<system version="1"><cpu numaid="0" {}>{}</cpu></system>)", cpu_attrs, body);
}

std::string gpu_pci(const std::string& busid, int dev, int sm, const std::string& inner = "",
                    const std::string& link = R"(link_speed="16.0 GT/s PCIe" link_width="16")") {
  return fmt::format(
      R"(<pci busid="{}" class="0x030200" {}><gpu dev="{}" sm="{}" rank="{}" gdr="1">{}</gpu></pci>)", busid,
      link, dev, sm, dev, inner);
}

std::string export_text(const Topology& t) {
  return dump_json(topology_to_json(t));
}

int links_of_kind(const Topology& t, LinkKind k) {
  int n = 0;
  for (const Link& l : t.links()) n += l.kind == k ? 1 : 0;
  return n;
}

std::size_t nodes_of_kind(const Topology& t, NodeKind k) {
  std::size_t n = 0;
  for (const Node& node : t.nodes()) n += node.kind == k ? 1 : 0;
  return n;
}

// The one link joining two named nodes.
const Link& link_between(const Topology& t, const std::string& a, const std::string& b) {
  const NodeId x = t.at(a);
  const NodeId y = t.at(b);
  for (const Link& l : t.links())
    if ((l.a == x && l.b == y) || (l.a == y && l.b == x)) return l;
  FAIL("no link between " << a << " and " << b);
  return t.links().front();  // unreachable: FAIL throws
}

}  // namespace

TEST_CASE("nccl import: a DGX H100 dump imports as 8 GPUs on one NVSwitch with a NIC each", "[nccl]") {
  // configs/nccl/dgx-h100.xml: 2 CPUs, 8 PCIe Gen5 switches each holding one
  // H100 (sm 90) and one 400 Gb/s NIC; every GPU lists its NVLinks to the
  // 4 NVSwitch chips as 4 + 5 + 5 + 4 = 18 lanes (tclass 0x068000).
  const Topology t = import_nccl_xml(kDgxH100);
  CHECK(t.name == "dgx-h100");
  CHECK(t.host_count() == 1);
  CHECK(t.hosts()[0].name == "h0");
  REQUIRE(t.gpus().size() == 8);
  CHECK(nodes_of_kind(t, NodeKind::nvswitch) == 1);
  CHECK(nodes_of_kind(t, NodeKind::cpu) == 2);
  CHECK(nodes_of_kind(t, NodeKind::pcie_switch) == 8);
  CHECK(t.host_nics(0).size() == 8);
  CHECK(links_of_kind(t, LinkKind::network) == 0);  // one host: no fabric
  for (int k = 0; k < 8; ++k) {
    INFO("gpu" << k);
    const std::string gpu = fmt::format("h0/gpu{}", k);
    CHECK(t.node(t.at(gpu)).model == "H100");
    // All 18 lanes to the NVSwitch chips become one 18-lane link.
    CHECK(nvlink_lanes(t, gpu, "h0/nvswitch") == 18);
    // GPU k shares its PCIe switch with NIC k (as the dgx-h100 preset).
    CHECK(t.node(*t.nic_of(t.at(gpu))).name == fmt::format("h0/nic{}", k));
  }
  CHECK(t.description.find("8 x 400 Gb/s") != std::string::npos);

  // GPU -> GPU: 2 NVLink hops through the NVSwitch, line rate 18 x 25 GB/s =
  // 450 GB/s, effective 450 x 0.824 = 370.8 GB/s, latency 2 x 500 ns.
  const Route& r = t.route(t.at("h0/gpu0"), t.at("h0/gpu5"));
  CHECK(path_of(t, r) == "h0/gpu0 h0/nvswitch h0/gpu5");
  for (const Hop& h : r.hops) {
    CHECK(t.link(h.link).kind == LinkKind::nvlink);
    CHECK(t.link(h.link).line_rate() == Bandwidth::GBps(450));
  }
  CHECK(r.bottleneck == Bandwidth::bytes_per_second(370'800'000'000));
  CHECK(r.latency == Time::us(1));

  // GPU 0 -> its NIC: 2 PCIe Gen5 x16 hops (64 GB/s line, 48 GB/s effective).
  const Route& n = t.route(t.at("h0/gpu0"), t.at("h0/nic0"));
  REQUIRE(n.hops.size() == 2);
  for (const Hop& h : n.hops) {
    const Link& l = t.link(h.link);
    CHECK(l.kind == LinkKind::pcie);
    CHECK(l.pcie_gen == 5);
    CHECK(l.pcie_width == 16);
  }
  CHECK(n.bottleneck == Bandwidth::GBps(48));
}

TEST_CASE("nccl import: an imported DGX H100 routes like the dgx-h100 preset", "[nccl]") {
  // Same machine, same link conventions: every GPU pair and every GPU's NIC
  // route has the preset's hop count, bottleneck and latency.
  const Topology imported = import_nccl_xml(kDgxH100);
  const Topology preset = cluster("dgx-h100");
  for (int a = 0; a < 8; ++a) {
    const std::string ga = fmt::format("h0/gpu{}", a);
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      INFO(a << " -> " << b);
      const std::string gb = fmt::format("h0/gpu{}", b);
      const Route& x = imported.route(imported.at(ga), imported.at(gb));
      const Route& y = preset.route(preset.at(ga), preset.at(gb));
      CHECK(x.hops.size() == y.hops.size());
      CHECK(x.bottleneck == y.bottleneck);
      CHECK(x.latency == y.latency);
    }
    const std::string nic = fmt::format("h0/nic{}", a);
    const Route& x = imported.route(imported.at(ga), imported.at(nic));
    const Route& y = preset.route(preset.at(ga), preset.at(nic));
    CHECK(x.bottleneck == y.bottleneck);
    CHECK(x.latency == y.latency);
  }
}

TEST_CASE("nccl import: a p3.16xlarge dump imports the hybrid cube mesh", "[nccl]") {
  // configs/nccl/p3.16xlarge.xml: 8 V100 (sm 70) with direct GPU-GPU
  // NVLinks (tclass 0x030200), each pair listed by both GPUs; the NV2/NV1
  // matrix of the DGX-1 layout and of the p3.16xlarge preset.
  const Topology t = import_nccl_xml(kP3);
  const Topology preset = cluster("p3.16xlarge");
  REQUIRE(t.gpus().size() == 8);
  CHECK(nodes_of_kind(t, NodeKind::nvswitch) == 0);
  CHECK(nodes_of_kind(t, NodeKind::pcie_switch) == 4);
  CHECK(t.host_nics(0).size() == 1);
  // 8 NV2 + 8 NV1 pairs, each added once although both GPUs list it.
  CHECK(links_of_kind(t, LinkKind::nvlink) == 16);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) {
        INFO("gpu" << a << " - gpu" << b);
        const std::string ga = fmt::format("h0/gpu{}", a);
        const std::string gb = fmt::format("h0/gpu{}", b);
        CHECK(nvlink_lanes(t, ga, gb) == nvlink_lanes(preset, ga, gb));
      }
  CHECK(nvlink_lanes(t, "h0/gpu0", "h0/gpu3") == 2);
  CHECK(nvlink_lanes(t, "h0/gpu0", "h0/gpu1") == 1);
  CHECK(t.node(t.gpus()[0]).model == "V100");

  // NV2 pair gpu0 - gpu3: one direct hop, 2 x 25 GB/s = 50 GB/s line rate.
  const Route& nv2 = t.route(t.at("h0/gpu0"), t.at("h0/gpu3"));
  REQUIRE(nv2.hops.size() == 1);
  CHECK(t.link(nv2.hops[0].link).line_rate() == Bandwidth::GBps(50));

  // gpu0 - gpu5 have no NVLink (and GPUs do not forward): PCIe through both
  // sockets, gpu0 -> switch -> cpu0 -> smp -> cpu1 -> switch -> gpu5; the
  // bottleneck is PCIe Gen3 x16 at 16 GB/s x 0.75 = 12 GB/s; latency
  // 4 x 250 ns + 300 ns.
  const Route& r = t.route(t.at("h0/gpu0"), t.at("h0/gpu5"));
  CHECK(path_of(t, r) == "h0/gpu0 h0/pcie0 h0/cpu0 h0/cpu1 h0/pcie2 h0/gpu5");
  CHECK(t.link(r.hops[2].link).kind == LinkKind::smp);
  CHECK(r.bottleneck == Bandwidth::GBps(12));
  CHECK(r.latency == Time::ns(1300));
  const Route& y = preset.route(preset.at("h0/gpu0"), preset.at("h0/gpu5"));
  CHECK(r.bottleneck == y.bottleneck);
  CHECK(r.latency == y.latency);

  // The one 25 Gb/s ENA NIC hangs off cpu0 ("8 GT/s", an older kernel's
  // spelling, is PCIe Gen3); every GPU uses it.
  const Link& nic = link_between(t, "h0/cpu0", "h0/nic0");
  CHECK(nic.pcie_gen == 3);
  for (NodeId g : t.gpus()) CHECK(t.node(*t.nic_of(g)).name == "h0/nic0");
  CHECK(t.description.find("1 x 25 Gb/s") != std::string::npos);
}

TEST_CASE("nccl import: an imported dump exports, loads and exports to the same bytes", "[nccl][json]") {
  // The import passes the topology file's validation: export -> load ->
  // export is byte-identical.
  for (const std::string& file : {kDgxH100, kP3}) {
    INFO(file);
    const std::string a = export_text(import_nccl_xml(file));
    const std::string b = export_text(topology_from_json(parse_json_text(a, "x.json"), "x.json"));
    CHECK(a == b);
  }
}

TEST_CASE("nccl import: import options name the host and the GPU model", "[nccl]") {
  // --host node7 renames every device; --gpu-model H200 overrides sm 90's H100.
  NcclImportOptions o;
  o.host = "node7";
  o.gpu_model = "H200";
  const Topology t = import_nccl_xml(kDgxH100, o);
  CHECK(t.hosts()[0].name == "node7");
  CHECK(t.node(t.at("node7/gpu3")).model == "H200");
  CHECK(t.find("h0/gpu3") == std::nullopt);
  CHECK(t.node(*t.nic_of(t.at("node7/gpu3"))).name == "node7/nic3");

  // sm -> model: 70 V100, 80 A100, 90 H100, others "sm<N>".
  CHECK(gpu_model_for_sm(70) == "V100");
  CHECK(gpu_model_for_sm(80) == "A100");
  CHECK(gpu_model_for_sm(90) == "H100");
  CHECK(gpu_model_for_sm(86) == "sm86");
  const Topology a = import_text(one_cpu(gpu_pci("0000:01:00.0", 0, 80)));
  CHECK(a.node(a.gpus()[0]).model == "A100");

  // Bad host names are usage errors.
  o.host = "a/b";
  CHECK_THROWS_AS(import_nccl_xml(kDgxH100, o), UsageError);
  o.host = "";
  CHECK_THROWS_AS(import_nccl_xml(kDgxH100, o), UsageError);
}

TEST_CASE("nccl import: PCIe link_speed and link_width set the generation and width", "[nccl]") {
  // 2.5 / 5 / 8 / 16 / 32 / 64 GT/s -> Gen1..6, with or without " PCIe"
  // and ".0"; the GPU's link to the CPU gets that gen and the width given.
  struct Case {
    const char* speed;
    int gen;
  };
  for (const Case c : {Case{"2.5 GT/s PCIe", 1}, Case{"5.0 GT/s PCIe", 2}, Case{"5 GT/s", 2},
                       Case{"8.0 GT/s PCIe", 3}, Case{"8 GT/s", 3}, Case{"16.0 GT/s PCIe", 4},
                       Case{"16 GT/s", 4}, Case{"32.0 GT/s PCIe", 5}, Case{"64.0 GT/s PCIe", 6}}) {
    INFO(c.speed);
    const Topology t = import_text(one_cpu(
        gpu_pci("0000:01:00.0", 0, 80, "", fmt::format(R"(link_speed="{}" link_width="8")", c.speed))));
    const Link& l = link_between(t, "h0/cpu0", "h0/gpu0");
    CHECK(l.pcie_gen == c.gen);
    CHECK(l.pcie_width == 8);
    // Line rate 250 MB/s x 2^(gen-1) per lane, x8.
    CHECK(l.line_rate() == Bandwidth::bytes_per_second(250'000'000) * 8 * (std::int64_t{1} << (c.gen - 1)));
  }
  // NCCL writes link_speed="" and link_width="0" when sysfs has no answer
  // and then assumes Gen3 x16; so does the import.
  const Topology t =
      import_text(one_cpu(gpu_pci("0000:01:00.0", 0, 80, "", R"(link_speed="" link_width="0")")));
  const Link& l = link_between(t, "h0/cpu0", "h0/gpu0");
  CHECK(l.pcie_gen == 3);
  CHECK(l.pcie_width == 16);
}

TEST_CASE("nccl import: nested PCIe bridges become switches, empty ones are dropped", "[nccl]") {
  // cpu -> bridge A -> bridge B -> GPU; bridge C holds nothing we model.
  // A and B become h0/pcie0 and h0/pcie1; the GPU reaches the CPU in 3 hops.
  const std::string xml = one_cpu(
      R"(<pci busid="0000:10:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">)"
      R"(<pci busid="0000:11:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">)" +
      gpu_pci("0000:12:00.0", 0, 90) +
      R"(</pci></pci>)"
      R"(<pci busid="0000:20:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">)"
      R"(<pci busid="0000:21:00.0" class="0x010802" link_speed="16.0 GT/s PCIe" link_width="4"/></pci>)");
  const Topology t = import_text(xml);
  CHECK(nodes_of_kind(t, NodeKind::pcie_switch) == 2);
  CHECK(path_of(t, t.route(t.at("h0/gpu0"), t.at("h0/cpu0"))) == "h0/gpu0 h0/pcie1 h0/pcie0 h0/cpu0");
  CHECK(link_between(t, "h0/cpu0", "h0/pcie0").pcie_gen == 5);
}

TEST_CASE("nccl import: NICs: one per net, by net dev, on their PCIe parent or on the CPU", "[nccl]") {
  // A dual-port NIC (two <net>) gives two NIC nodes on the same PCIe parent;
  // a <nic> directly in a <cpu> (no PCIe path) is joined to the CPU by
  // PCIe Gen3 x16. Names follow the net dev attribute.
  const std::string xml = one_cpu(
      gpu_pci("0000:01:00.0", 0, 80) +
      R"(<pci busid="0000:02:00.0" class="0x020700" link_speed="16.0 GT/s PCIe" link_width="16"><nic>)"
      R"(<net name="mlx5_2" dev="2" speed="200000" port="1"/><net name="mlx5_1" dev="1" speed="100000" port="2"/>)"
      R"(</nic></pci><nic><net name="eth0" dev="0" speed="-1"/></nic>)");
  const Topology t = import_text(xml);
  REQUIRE(t.host_nics(0).size() == 3);
  CHECK(t.node(t.host_nics(0)[0]).name == "h0/nic0");
  CHECK(link_between(t, "h0/cpu0", "h0/nic0").pcie_gen == 3);
  CHECK(link_between(t, "h0/cpu0", "h0/nic1").pcie_gen == 4);
  CHECK(link_between(t, "h0/cpu0", "h0/nic2").pcie_gen == 4);
  // Speeds go to the description; -1 is NCCL's "unknown".
  CHECK(t.description.find("1 x 200 Gb/s, 1 x 100 Gb/s, 1 x unknown speed") != std::string::npos);
}

TEST_CASE("nccl import: NVLinks to GPUs, NVSwitches and the CPU", "[nccl]") {
  // gpu0 lists 3 lanes to gpu1 (tclass 0x030000, a VGA-class GPU) and 2 to
  // the POWER9 CPU (0x068001); gpu1 lists the 3 lanes back and a GPU that
  // is not in the dump (skipped). Lanes at 25 GB/s (sm 70).
  const std::string xml =
      one_cpu(gpu_pci("0000:01:00.0", 0, 70,
                      R"(<nvlink target="0000:02:00.0" count="3" tclass="0x030000"/>)"
                      R"(<nvlink target="0000:00:00.0" count="2" tclass="0x068001"/>)") +
                  gpu_pci("0000:02:00.0", 1, 70,
                          R"(<nvlink target="0000:01:00.0" count="3" tclass="0x030200"/>)"
                          R"(<nvlink target="0000:99:00.0" count="1" tclass="0x030200"/>)"),
              R"(arch="ppc64" vendor="IBM")");
  const Topology t = import_text(xml);
  CHECK(nvlink_lanes(t, "h0/gpu0", "h0/gpu1") == 3);
  CHECK(nvlink_lanes(t, "h0/gpu0", "h0/cpu0") == 2);
  CHECK(nodes_of_kind(t, NodeKind::nvswitch) == 0);
  // GPU traffic never goes through the CPU's NVLink: gpu0 -> gpu1 is direct.
  CHECK(path_of(t, t.route(t.at("h0/gpu0"), t.at("h0/gpu1"))) == "h0/gpu0 h0/gpu1");
  // And the import still passes the topology file's validation.
  const std::string a = export_text(t);
  CHECK(export_text(topology_from_json(parse_json_text(a, "x.json"), "x.json")) == a);

  // One NVSwitch element of 18 lanes is the same as 4 + 5 + 5 + 4; an
  // unknown class is taken for an NVSwitch, as NCCL does.
  const Topology s = import_text(one_cpu(
      gpu_pci("0000:01:00.0", 0, 90, R"(<nvlink target="0000:05:00.0" count="18" tclass="0x068000"/>)") +
      gpu_pci("0000:02:00.0", 1, 90, R"(<nvlink target="ffffffff:ffff:ff" count="18" tclass="0x0680ff"/>)")));
  CHECK(nvlink_lanes(s, "h0/gpu0", "h0/nvswitch") == 18);
  CHECK(nvlink_lanes(s, "h0/gpu1", "h0/nvswitch") == 18);

  // Grace Hopper: <c2c bw="..." count="..."/> (MB/s per link) is an NVLink
  // to the CPU at that rate: 10 x 45 GB/s, efficiency 1.
  const Topology gh = import_text(one_cpu(gpu_pci("0000:01:00.0", 0, 90, R"(<c2c bw="45000" count="10"/>)"),
                                          R"(arch="arm64" vendor="ARM")"));
  const Link& c2c = link_between(gh, "h0/gpu0", "h0/cpu0");
  CHECK(c2c.kind == LinkKind::nvlink);
  CHECK(c2c.line_rate() == Bandwidth::GBps(450));
  CHECK(c2c.efficiency == 1.0);
}

TEST_CASE("nccl import: CPU sockets are joined by an smp link sized by CPU family", "[nccl]") {
  // Intel: the presets' 20 GB/s; AMD (xGMI) and POWER9: 32 GB/s.
  auto two_sockets = [](const std::string& attrs) {
    return fmt::format(
        R"(<system version="1"><cpu numaid="0" {0}>{1}</cpu><cpu numaid="1" {0}>{2}</cpu></system>)", attrs,
        gpu_pci("0000:01:00.0", 0, 80), gpu_pci("0000:81:00.0", 1, 80));
  };
  const Topology intel = import_text(two_sockets(R"(arch="x86_64" vendor="GenuineIntel")"));
  CHECK(link_between(intel, "h0/cpu0", "h0/cpu1").line_rate() == Bandwidth::GBps(20));
  const Topology amd = import_text(two_sockets(R"(arch="x86_64" vendor="AuthenticAMD")"));
  CHECK(link_between(amd, "h0/cpu0", "h0/cpu1").line_rate() == Bandwidth::GBps(32));
  CHECK(link_between(amd, "h0/cpu0", "h0/cpu1").kind == LinkKind::smp);
}

TEST_CASE("nccl import: GPUs are named by dev, or by bus id when devs repeat", "[nccl]") {
  // Listed dev 1 then dev 0: gpu0 is still the dev-0 GPU and comes first.
  const Topology t = import_text(one_cpu(gpu_pci("0000:02:00.0", 1, 80) + gpu_pci("0000:01:00.0", 0, 80)));
  CHECK(t.node(t.gpus()[0]).name == "h0/gpu0");
  CHECK(path_of(t, t.route(t.at("h0/gpu0"), t.at("h0/cpu0"))) == "h0/gpu0 h0/cpu0");
  // Ranks that each saw one GPU all write dev 0: number by PCI bus id.
  const Topology d = import_text(one_cpu(gpu_pci("0000:b2:00.0", 0, 80) + gpu_pci("0000:1a:00.0", 0, 80)));
  REQUIRE(d.gpus().size() == 2);
  CHECK(d.node(d.gpus()[0]).name == "h0/gpu0");
  CHECK(d.node(d.gpus()[1]).name == "h0/gpu1");
  CHECK(d.description.find("PCI bus id order") != std::string::npos);
}

TEST_CASE("nccl import: malformed dumps are rejected with the file and XML path", "[nccl][bad-input]") {
  struct Case {
    const char* what;
    std::string xml;
    const char* message;  // expected in what(), after "dump.xml: "
  };
  const std::string pci = R"(<pci busid="0000:01:00.0" link_speed="16.0 GT/s PCIe" link_width="16">)";
  const Case cases[] = {
      {"missing dev",
       R"(<system version="1"><cpu>)" + gpu_pci("0000:01:00.0", 0, 80) + R"(</cpu><cpu>)" + pci +
           R"(</pci>)" + pci + R"(<gpu sm="80"/></pci></cpu></system>)",
       R"(dump.xml: system/cpu[1]/pci[1]/gpu: missing attribute "dev")"},
      {"bad link_speed",
       one_cpu(gpu_pci("0000:01:00.0", 0, 80, "", R"(link_speed="12 GT/s" link_width="16")")),
       R"(dump.xml: system/cpu/pci: attribute link_speed="12 GT/s" is not a PCIe link speed)"},
      {"bad link_width",
       one_cpu(gpu_pci("0000:01:00.0", 0, 80, "", R"(link_speed="8 GT/s" link_width="12")")),
       R"(dump.xml: system/cpu/pci: attribute link_width="12" is not a PCIe width)"},
      {"no gpus", R"(<system version="1"><cpu numaid="0"/></system>)", "dump.xml: system: no <gpu> element"},
      {"not XML", "{\"format\": \"meshsim.topology/1\"}", "dump.xml: not valid XML at line 1"},
      {"truncated", "<system version=\"1\">\n<cpu>\n", "dump.xml: not valid XML at line 3"},
      {"not a dump", "<html/>", "dump.xml: no <system> element"},
      {"version", R"(<system version="2"/>)", "dump.xml: system: version 2 is not supported"},
      {"sm not a number", one_cpu(pci + R"(<gpu dev="0" sm="ninety"/></pci>)"),
       R"(dump.xml: system/cpu/pci/gpu: attribute sm="ninety" is not an integer)"},
      {"nvlink count 0",
       one_cpu(gpu_pci("0000:01:00.0", 0, 80, R"(<nvlink target="x" count="0" tclass="0x068000"/>)")),
       R"(dump.xml: system/cpu/pci/gpu/nvlink: attribute count="0" is out of range)"},
      {"nvlink without tclass", one_cpu(gpu_pci("0000:01:00.0", 0, 80, R"(<nvlink target="x" count="2"/>)")),
       R"(dump.xml: system/cpu/pci/gpu/nvlink: missing attribute "tclass")"},
      {"asymmetric NVLink",
       one_cpu(
           gpu_pci("0000:01:00.0", 0, 70, R"(<nvlink target="0000:02:00.0" count="2" tclass="0x030200"/>)") +
           gpu_pci("0000:02:00.0", 1, 70, R"(<nvlink target="0000:01:00.0" count="1" tclass="0x030200"/>)")),
       "dump.xml: system/cpu/pci[1]/gpu/nvlink: h0/gpu1 lists 1 NVLink lanes to h0/gpu0, which lists 2 back"},
      {"NVLink to itself",
       one_cpu(
           gpu_pci("0000:01:00.0", 0, 70, R"(<nvlink target="0000:01:00.0" count="2" tclass="0x030200"/>)")),
       "dump.xml: system/cpu/pci/gpu/nvlink: an NVLink from a GPU to itself"},
      {"gpu outside pci", one_cpu(R"(<gpu dev="0" sm="80"/>)"),
       "dump.xml: system/cpu/gpu: a <gpu> belongs inside"},
      {"two hosts",
       R"(<system version="1"><cpu host_hash="0x1">)" + gpu_pci("0000:01:00.0", 0, 90) +
           R"(</cpu><cpu host_hash="0x2">)" + gpu_pci("0000:01:00.0", 0, 90) + R"(</cpu></system>)",
       "dump.xml: system/cpu[1]: host_hash 0x2 differs from 0x1"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK_THROWS_AS(import_text(c.xml), ConfigError);
    CHECK_THROWS_WITH(import_text(c.xml), Catch::StartsWith(c.message));
  }
  // A hostile nesting depth is refused before parsing (the parser recurses).
  std::string deep = R"(<system version="1">)";
  for (int i = 0; i < 100'000; ++i) deep += "<pci>";
  CHECK_THROWS_WITH(import_text(deep),
                    Catch::StartsWith("dump.xml: line 1: elements nested deeper than 64 levels"));
  // Files that cannot be read.
  CHECK_THROWS_WITH(import_nccl_xml("/nonexistent/topo.xml"), Catch::Contains("no such file"));
  CHECK_THROWS_WITH(import_nccl_xml(MESHSIM_SOURCE_DIR), Catch::Contains("is a directory"));
}

TEST_CASE("nccl import: XML the property-tree parser would let through is refused", "[nccl][bad-input]") {
  // Each text below parses with boost's lenient reader (which then imports
  // a topology from it); meshsim refuses it, naming the line.
  const std::string gpu = gpu_pci("0000:01:00.0", 0, 80);
  struct Case {
    const char* what;
    std::string xml;
    const char* message;
  };
  const Case cases[] = {
      {"duplicate attribute",
       "<system version=\"1\">\n<cpu numaid=\"0\" numaid=\"1\">" + gpu + "</cpu></system>",
       R"(dump.xml: line 2: attribute "numaid" given twice in one <cpu> element)"},
      {"unknown entity", R"(<system version="1"><cpu arch="&bogus;">)" + gpu + "</cpu></system>",
       "dump.xml: line 1: unknown entity &bogus;: XML predefines only"},
      {"NUL reference", R"(<system version="1"><cpu arch="&#0;">)" + gpu + "</cpu></system>",
       "dump.xml: line 1: character reference &#0; names no character XML allows"},
      {"bad hex reference", R"(<system version="1"><cpu arch="&#xD800;">)" + gpu + "</cpu></system>",
       "dump.xml: line 1: character reference &#xD800; names no character XML allows"},
      {"internal DTD", "<?xml version=\"1.0\"?>\n<!DOCTYPE system [<!ENTITY x \"lol\">]>\n" + one_cpu(gpu),
       "dump.xml: line 2: a document type declaration (<!DOCTYPE ...>)"},
      {"control character", "<system version=\"1\">\x01" + std::string("<cpu>") + gpu + "</cpu></system>",
       "dump.xml: line 1: control character 0x01, which XML does not allow"},
      {"bare ampersand", R"(<system version="1"><cpu arch="a & b">)" + gpu + "</cpu></system>",
       "dump.xml: line 1: a '&' that starts no reference"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK_THROWS_WITH(import_text(c.xml), Catch::StartsWith(c.message));
  }
  // The five predefined entities and references to allowed characters pass.
  CHECK(import_text(R"(<system version="1"><cpu arch="&lt;&gt;&amp;&quot;&apos;&#65;&#x42;">)" + gpu +
                    "</cpu></system>")
            .gpus()
            .size() == 1);
}
