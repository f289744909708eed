#pragma once
// Importing an NCCL topology dump (the XML NCCL writes to the file named by
// NCCL_TOPO_DUMP_FILE) as one meshsim host, so that a calibration run can
// describe the machine it ran on. docs/topology-format.md has the user's
// view; NCCL's reader is src/graph/xml.cc and topo.cc.
//
// The dump (format version 1):
//   <system version="1">
//     <cpu numaid arch vendor ...>                      one per NUMA node
//       <pci busid class link_speed link_width>         a PCIe bridge or switch ...
//         <pci busid class="0x0302.." ...>              ... or a device's endpoint
//           <gpu dev sm rank gdr>
//             <nvlink target count tclass/>            NVLink lanes to one peer
//             <c2c bw count/>                           NVLink-C2C to the CPU (Grace)
//         <pci ...><nic><net name dev speed port .../></nic></pci>
//       <nic>...</nic>                                  a NIC with no PCIe path
//
// What becomes what (host "h0"; every link is built with the conventions of
// topology/link_params.h, so an import of a DGX matches its preset):
//   cpu        node "h0/cpu<i>" in document order; every pair of CPUs joined
//              by an smp link whose rate depends on arch/vendor (smp_rate_for).
//   pci        with pci children: a PCIe bridge or switch port, node
//              "h0/pcie<k>" (only when a GPU or NIC sits below it), joined to
//              its parent (cpu or bridge) by PCIe; without pci children: the
//              endpoint of the gpu or nic it holds. Either way the element's
//              link_speed ("16.0 GT/s PCIe", "16 GT/s": 2.5/5/8/16/32/64 →
//              Gen1..6) and link_width give the link to its parent. NCCL
//              writes "" when it could not read the speed and 0 for an
//              unknown width and then assumes Gen3 and x16; so do we.
//   gpu        node "h0/gpu<dev>", model from --gpu-model or from sm
//              (the catalogue's model of that sm, hardware::gpu_for_sm; any other "sm<N>"). GPUs are
//              added in dev order. If two GPUs share a dev (ranks that each
//              saw one GPU), GPUs are numbered 0..n-1 in PCI bus-id order.
//   nvlink     by tclass, as NCCL reads it (a prefix match):
//                0x03....  a GPU (0x030200 3D controller, 0x030000 VGA):
//                          one nvlink per GPU pair with `count` lanes (the
//                          pair is listed by both GPUs; counts must agree);
//                          a target GPU absent from the dump is skipped.
//                0x068001  the CPU (IBM NPU bridge on POWER9): nvlink to the
//                          GPU's cpu node.
//                other     an NVSwitch (0x068000; NCCL also assumes one for
//                          any other class): all such lanes of a GPU, summed
//                          over the NVSwitch chips it lists, join one logical
//                          node "h0/nvswitch", as the presets model NVSwitch.
//              Lane rate and efficiency by the GPU's sm (nvlink_generation).
//   c2c        nvlink to the GPU's cpu: `count` lanes of `bw` MB/s each,
//              efficiency 1 (NCCL models C2C at its full rate).
//   nic/net    node "h0/nic<dev>" per <net> (a dual-port NIC gives two), in
//              net dev order (document order if devs repeat or are missing),
//              joined by PCIe to the parent of the NIC's pci element, or to
//              its cpu by PCIe Gen3 x16 when the <nic> sits directly in a cpu
//              (NCCL's default). No network links are made: one host has no
//              fabric. Net names and speeds (Mb/s) go into the description.
// Ignored: every other element (pcilink, ...) and attribute (rank, gdr,
// affinity, guid, ...).
//
// Errors are ConfigError with the file and an XML path such as
// `system/cpu[0]/pci[1]/gpu: missing attribute "dev"` (an index only where an
// element has same-named siblings): a file that is not XML (with the
// parser's line), no <system>, a version other than 1, a missing or
// malformed attribute that the import needs, no GPU, several hosts in one
// dump (cpus with different host_hash: a multi-node NVLink dump).

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace meshsim::topology {

struct NcclImportOptions {
  std::string host = "h0";  // host name; node names are "<host>/gpu0", ...
  std::string gpu_model;    // empty: derived from sm; say so here when models share one
  std::string name;         // topology name; empty: the file's stem
};

/// Reads and imports the dump at `path`. ConfigError on any mistake in the
/// file; UsageError on bad options (an empty host name or one with '/').
[[nodiscard]] Topology import_nccl_xml(const std::string& path, const NcclImportOptions& opts = {});

/// Imports dump text; `file` names it in errors and gives the default name.
[[nodiscard]] Topology import_nccl_xml_text(std::string_view xml, const std::string& file,
                                            const NcclImportOptions& opts = {});

/// The GPU model a compute capability stands for (hardware::gpu_for_sm:
/// models that share an sm cannot be told apart by it: pass the model to tell them
/// apart), else "sm<N>".
[[nodiscard]] std::string gpu_model_for_sm(int sm);

}  // namespace meshsim::topology
