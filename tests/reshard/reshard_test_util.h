#pragma once
// Shared by the resharding tests (tests/reshard) and the tests
// that run its plans (tests/integration): the paper's cluster, a problem
// from mesh selectors and specs, and the strategies and balances to sweep.

#include <string>
#include <vector>

#include "reshard/reshard.h"
#include "topology/topology_json.h"

namespace meshsim::reshard::testing {

inline const topology::Topology& alpa_cluster() {
  static const topology::Topology t =
      topology::load_topology_file(MESHSIM_SOURCE_DIR "/configs/topologies/p3.8xlarge-x5.json");
  return t;
}

inline ReshardProblem problem(const topology::Topology& t, std::vector<std::int64_t> shape,
                              const std::string& src_mesh, const std::string& src_spec,
                              const std::string& dst_mesh, const std::string& dst_spec,
                              plan::DType dtype = plan::DType::i32) {
  return make_problem(t, plan::Tensor{"x", std::move(shape), dtype}, src_mesh, src_spec, dst_mesh, dst_spec);
}

inline constexpr Balance kBalances[] = {Balance::none, Balance::device, Balance::host_size,
                                        Balance::host_order, Balance::search};

struct PaperCase {
  std::vector<std::int64_t> shape;
  const char *src_mesh, *src_spec, *dst_mesh, *dst_spec;
};

}  // namespace meshsim::reshard::testing
