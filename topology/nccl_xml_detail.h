#pragma once
// Internal to topology/: an NCCL topology dump read into what the import
// needs (nccl_xml_read.cpp), before nccl_xml.cpp turns it into nodes and
// links. Every entry keeps the XML path it came from, for error messages.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "topology/topology.h"

namespace meshsim::topology {

/// A PCIe link read from link_speed / link_width.
struct PcieHop {
  int gen = 3;  // NCCL's assumption when the dump does not say
  int width = 16;
};

enum class PeerKind { gpu, cpu, nvswitch };

struct NvlinkRef {
  std::string path;
  PeerKind kind = PeerKind::nvswitch;
  std::string target;  // bus id, lower case
  int count = 0;
};

struct C2cRef {
  int count = 0;
  Bandwidth lane;
};

/// A cpu or a PCIe bridge: what devices hang from.
struct Place {
  int parent = -1;  // index into places; -1 for a cpu
  int cpu = 0;      // the cpu it is (or sits under)
  PcieHop uplink;   // bridges: the link to the parent
  bool used = false;
  NodeId node = 0;
};

struct GpuEntry {
  std::string path;
  int dev = 0;
  int sm = 0;
  std::string busid;
  int place = 0;
  PcieHop link;
  std::vector<NvlinkRef> nvlinks;
  std::vector<C2cRef> c2c;
  NodeId node = 0;
};

struct NicEntry {
  std::string path;
  std::optional<std::int64_t> dev;
  std::string name;
  std::optional<std::int64_t> speed_mbps;
  int place = 0;
  PcieHop link;
};

struct CpuEntry {
  std::string arch;
  std::string vendor;
  int place = 0;
};

struct NcclDump {
  std::vector<Place> places;  // cpus and bridges, in document order
  std::vector<CpuEntry> cpus;
  std::vector<GpuEntry> gpus;  // in document order
  std::vector<NicEntry> nics;  // one per <net>, in document order
};

/// Parses and checks a dump (see nccl_xml.h for what is read); ConfigError
/// with the file and XML path on any mistake.
[[nodiscard]] NcclDump read_nccl_dump(std::string_view xml, const std::string& file);

}  // namespace meshsim::topology
