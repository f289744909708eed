#pragma once
// Device meshes: a logical 2-D grid over GPUs (rows × cols, row-major).
//
// Selector syntax (commas separate items; an item without "=" continues
// the list of the key before it):
//   all                       every GPU; shape hosts × GPUs per host
//   hosts=0-1                 all GPUs of hosts 0 and 1, host-major;
//                             shape 2 × (GPUs per host)
//   hosts=0-1,gpus=0-3        GPUs 0..3 of hosts 0 and 1; shape 2 × 4
//   hosts=0,2,4,gpus=1        lists and ranges mix
//   h0/gpu0,h1/gpu0,...       explicit device names; shape 1 × n
//   ...,shape=4x2             any of the above with an explicit shape
//                             (rows × cols must equal the device count)
// Mistakes throw UsageError with the offending item.

#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.h"

namespace meshsim::topology {

struct DeviceMesh {
  std::vector<NodeId> devices;  // row-major
  int rows = 0;
  int cols = 0;

  [[nodiscard]] NodeId at(int r, int c) const { return devices[static_cast<std::size_t>(r * cols + c)]; }
  [[nodiscard]] std::size_t size() const { return devices.size(); }
};

[[nodiscard]] DeviceMesh select_mesh(const Topology& t, std::string_view selector);

}  // namespace meshsim::topology
