#pragma once
// nccl-tests runs (plan/nccl_tests.h) predicted on a cluster, and the link
// efficiency and hop latency that make the predictions meet them.
//
// Each row of a run is the plan nccl-tests runs for its size (nccl_test_plan:
// one collective over the ranks in ring order, or every rank sending to the
// next for sendrecv), simulated with the collective model every command
// uses (NCCL's algorithm and protocol choice, flows on the links). Rank r
// runs on the GPU `device` of the run's k-th host, k counted in the order
// hosts first appear: the cluster's GPU h<k>/gpu<device>.
//
// The fit: runs whose ranks share one host cross NVLink (or PCIe) only and
// set the `nvlink` kind's efficiency and latency; runs over several hosts
// then set the `network` kind's, with the NVLink figures fixed. Each kind's
// two figures minimise the sum over its rows of the squared relative error
// (predicted / measured − 1), by golden-section search on one figure with
// the other fixed, alternated until neither moves: efficiency in
// [0.02, 1], latency in [0, 100 us]. A kind no run exercises keeps its
// preset figures and is not reported.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/nccl_tests.h"
#include "plan/plan.h"
#include "topology/topology.h"

namespace meshsim::sim {

/// What one collective of a sweep runs as: the op (meshsim's names, as
/// plan::NcclTestsRun::op), its algorithm, protocol and channels (unset,
/// 0: chosen as NCCL chooses).
struct NcclTestSpec {
  std::string op;
  std::optional<plan::Algorithm> algorithm;
  std::optional<plan::Protocol> protocol;
  int channels = 0;
};

/// The plan nccl-tests runs for one size over `ring` (device names, in ring
/// order); UsageError for an op it does not know.
[[nodiscard]] plan::Plan nccl_test_plan(const NcclTestSpec& spec, const std::vector<std::string>& ring,
                                        Bytes size);

/// The cluster GPUs of a run's ranks, in ring order (sim/ring_order.h);
/// UsageError naming the rank when the cluster has no such GPU.
[[nodiscard]] std::vector<std::string> nccl_test_gpus(const plan::NcclTestsRun& run,
                                                      const topology::Topology& topo);

/// The predicted time of every row of `run` on `topo`.
[[nodiscard]] std::vector<Time> predict_nccl_test(const plan::NcclTestsRun& run,
                                                  const topology::Topology& topo);

struct NcclFitPoint {
  std::size_t run = 0;
  std::size_t row = 0;
  Time measured;
  Time predicted;  // with the fitted figures
  [[nodiscard]] double error() const { return predicted.seconds() / measured.seconds() - 1; }
};

struct NcclLinkFit {
  std::string kind;  // "nvlink" or "network"
  double efficiency = 1;
  Time latency;
  std::size_t points = 0;  // rows it was fitted to
  double rms_error = 0;    // of those rows' relative errors
  double max_abs_error = 0;
  // The spread: each figure moved by the rows' rms relative error (a row's
  // time goes as 1 / efficiency where bandwidth binds and with the latency
  // where it does not), the efficiency kept within [0.02, 1].
  std::pair<double, double> efficiency_spread;
  std::pair<Time, Time> latency_spread;
};

struct NcclFit {
  std::vector<NcclLinkFit> links;
  std::vector<NcclFitPoint> points;  // every row of every run
};

/// Fits as above; `topo` ends with the fitted figures on its links.
/// UsageError for no runs.
[[nodiscard]] NcclFit fit_nccl_tests(const std::vector<plan::NcclTestsRun>& runs, topology::Topology& topo);

}  // namespace meshsim::sim
