#pragma once
// The topology of the CUDA (and host) backend's virtual devices: many plan
// devices carved out of the memory of one real GPU (or of the host).
//
// Every plan device becomes a GPU node of its host (the part of its name
// before '/'), joined to one copy hub by a link of the single-copy
// bandwidth B1 and half the copy latency L, so that one copy between two
// virtual devices takes L + S/B1. All copies also cross one shared
// `memory` link of the aggregate copy bandwidth Bn (simulate with
// SimOptions::shared_link = memory): concurrent copies share the one
// memory, as they do on the real device.
//
//   calibrated:  B1, L from a single cudaMemcpyAsync (or memcpy) sweep;
//                Bn from concurrent copies on every stream (calibrate).

#include <string>
#include <vector>

#include "core/units.h"
#include "topology/topology.h"

namespace meshsim::topology {

struct VirtualGpu {
  Topology topology;
  DirLinkId memory = 0;  // the shared link, forward direction
};

/// UsageError for an empty device list or non-positive bandwidths.
[[nodiscard]] VirtualGpu virtual_gpu_topology(const std::vector<std::string>& devices,
                                              const std::string& gpu_model, Bandwidth single_copy,
                                              Bandwidth aggregate, Time copy_latency);

}  // namespace meshsim::topology
