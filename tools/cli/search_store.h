#pragma once
// Where `meshsim search` keeps results between runs and between MPI ranks:
// every finished configuration is appended at once to
// DIR/results.partial[.RANK].csv, so an interrupted search loses at most the
// configurations in flight; `--resume DIR` reads results.csv and every
// partial file back and reuses each row whose key (search/results.h)
// a configuration of the new search has.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "search/results.h"

namespace meshsim::cli {

/// Rows already computed in `dir`, by key (missing files: none).
[[nodiscard]] std::map<std::string, search::Result> load_search_rows(const std::string& dir);

/// Appends rows to one partial file as they come.
class PartialResults {
 public:
  PartialResults() = default;
  /// Opens DIR/results.partial.csv (RANK > 0 or ranks > 1: .RANK); UsageError when it cannot.
  PartialResults(const std::string& dir, int rank, int ranks);
  PartialResults(const PartialResults&) = delete;
  PartialResults& operator=(const PartialResults&) = delete;
  ~PartialResults();
  void append(const std::string& row);

 private:
  std::FILE* file_ = nullptr;
};

/// Removes the partial files of `dir` once results.csv holds everything.
void remove_partial_results(const std::string& dir);

/// Completes `results` (rank 0) with the rows the other ranks computed:
/// each rank sends "index<TAB>row" lines for the indices it ran.
void gather_search_rows(std::vector<search::Result>& results, const std::vector<std::size_t>& mine,
                        const std::vector<std::string>& keys);

}  // namespace meshsim::cli
