#include "runtime/distributed.h"

namespace meshsim::runtime {

namespace {
Distributed* g_distributed = nullptr;
}  // namespace

Distributed* distributed() {
  return g_distributed;
}

void set_distributed(Distributed* d) {
  g_distributed = d;
}

}  // namespace meshsim::runtime
