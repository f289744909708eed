#pragma once
// The processes of a distributed run (MPI), as the NCCL backend needs
// them: one process per GPU, rank r runs plan device r (docs/runtime.md).
// `meshsim-mpi` (tools/meshsim_mpi.cpp, built when Open MPI is found)
// installs one; the plain `meshsim` binary never links MPI.

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/backend.h"

namespace meshsim::runtime {

class Distributed {
 public:
  Distributed() = default;
  Distributed(const Distributed&) = delete;
  Distributed& operator=(const Distributed&) = delete;
  virtual ~Distributed() = default;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// Rank among the processes of this host (picks the GPU).
  [[nodiscard]] virtual int local_rank() const = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  /// Element-wise minimum of starts and maximum of ends over all ranks;
  /// ranks that did not run a task pass Time::max() / Time::zero() - 1 ps.
  virtual void combine_spans(std::vector<TaskSpan>& spans) = 0;
  /// Every rank's `mine`, in rank order, on `root`; empty elsewhere.
  [[nodiscard]] virtual std::vector<std::string> gather(const std::string& mine, int root) = 0;
};

/// The process's distributed context, or nullptr in a single-process run.
[[nodiscard]] Distributed* distributed();
void set_distributed(Distributed* d);

}  // namespace meshsim::runtime
