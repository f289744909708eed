#include "model/parallel_config.h"

#include <fmt/format.h>

namespace meshsim::model {

std::string degrees(const ParallelConfig& c) {
  return c.cp > 1 ? fmt::format("dp {} x cp {} x tp {} x pp {}", c.dp, c.cp, c.tp, c.pp)
                  : fmt::format("dp {} x tp {} x pp {}", c.dp, c.tp, c.pp);
}

}  // namespace meshsim::model
