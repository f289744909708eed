#pragma once
// A search's results as text: `results.csv` rows that read back to the
// same results (every number in its shortest exact form), and the key that
// names a configuration's result across runs.
//
// Columns: dp, tp, pp, microbatches, microbatch_size, schedule,
// virtual_stages, recompute (none, selective, full), sequence_parallel
// (0/1), zero (0-3), flash_attention (0/1), ep, cp, reshard, status, iteration_s,
// samples_per_s, tflops_per_gpu, bubble, exposed_comm_s (empty unless
// simulated), peak_memory_bytes, key, reason (invalid: why; quoted).
//
// The key is 16 hex digits of a 64-bit FNV-1a hash of the configuration and
// the search's fingerprint, itself such a hash of the model (every layer's
// costs), the topology (its JSON form, links and calibrated efficiencies
// included: a megabyte for 1,000 GPUs, hashed once per search), the
// compute models and the meshsim version. A result is reused (--resume,
// ranks of an MPI search) only under the same key.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "search/search.h"

namespace meshsim::search {

[[nodiscard]] std::string csv_header();
/// One line, newline included.
[[nodiscard]] std::string csv_row(const Result& r, const std::string& key);
/// `results.csv` of results in enumeration order, written a row at a time.
void write_results_csv(std::ostream& out, const std::vector<Result>& results,
                       const std::vector<std::string>& keys);
/// The same as one string (for tests).
[[nodiscard]] std::string results_csv(const std::vector<Result>& results,
                                      const std::vector<std::string>& keys);

struct KeyedResult {
  std::string key;
  Result result;
};
/// A row csv_row wrote; ConfigError naming `file` and the line on anything else.
[[nodiscard]] KeyedResult parse_csv_row(std::string_view line, const std::string& file, std::size_t line_no);

/// What every result of a search depends on besides its configuration, hashed.
[[nodiscard]] std::string fingerprint(const model::Model& m, const topology::Topology& t,
                                      const std::vector<sim::DeviceModel>& device_models,
                                      std::string_view version);
[[nodiscard]] std::string config_key(const std::string& fingerprint, const pipeline::PipelineConfig& c);

}  // namespace meshsim::search
