#pragma once
// Search space files (`meshsim.search/1`), read by `meshsim search SPACE`:
//
// {"format": "meshsim.search/1", "name": ..., "description": ...,
//  "model": a name from configs/models/ or a model file (relative to the space file),
//  "machine": {"host": preset, "hosts": N, "fabric": ...}   (a topology file's cluster form)
//    or "topology": a topology file (relative) or a host preset,
//  "placement": "random:1",                                     (optional; topology/placement.h)
//  "compute_efficiency": 0.5,                                   (optional)
//  "global_batch": 1536, "gpus": 1024,                          (gpus optional: all)
//  "microbatch_sizes": [1, 2, 4], "schedules": ["1f1b", ...],
//  "virtual_stages": [2, 4], "recompute": ["none", "selective", "full"] (or false/true),
//  "sequence_parallel": [false, true], "zero": [0, 1], "flash_attention": [true],
//  "ep": [1, 8],                                                (expert parallelism)
//  "cp": [1, 2],                                                (context parallelism)
//  "tp": [8], "pp": [4, 8], "dp": [...],                        (fixed degrees; default: all)
//  "reshards": ["broadcast", ...], "tp_across_hosts": false,
//  "memory_reserve": "2GiB", "host_per_kernel": "0us",
//  "fp8": false, "overlap_grad_reduce": false, "overlap_param_gather": false,
//  "tp_comm_overlap": false}                                    (all optional but global_batch)
// search.h says what each dimension means.

#include <optional>
#include <string>

#include "search/search.h"
#include "topology/cluster.h"

namespace meshsim::search {

struct SpaceFile {
  std::string name;
  std::string description;
  std::string model;                             // a model name, or the resolved path of a model file
  std::optional<topology::ClusterSpec> machine;  // else `topology`
  std::string topology;                          // resolved path or preset name
  std::string placement;                         // topology/placement.h; empty: the topology's own
  std::optional<double> compute_efficiency;
  Space space;
};

/// True when `file` holds a meshsim.search/1 document.
[[nodiscard]] bool is_search_space(const std::string& file);
/// ConfigError with the file and JSON path on any mistake.
[[nodiscard]] SpaceFile load_space_file(const std::string& file);

}  // namespace meshsim::search
