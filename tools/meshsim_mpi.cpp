// meshsim-mpi: the meshsim command line inside an MPI job, for the NCCL
// backend across processes (one per GPU, runtime/distributed.h) and for
// searches spread over machines:
//   mpirun -np 8 meshsim-mpi run plan.json --backend nccl
//   mpirun -np 4 meshsim-mpi search configs/studies/search-gpt3-175b.json --out s/
// Every process runs the same command; rank 0 prints. A failing rank aborts
// the job, so that no rank waits forever in a collective.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mpi.h>
#include <string>
#include <vector>

#include "runtime/distributed.h"
#include "tools/cli/commands.h"

namespace {

class MpiWorld final : public meshsim::runtime::Distributed {
 public:
  MpiWorld() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
  }
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] int local_rank() const override { return local_rank_; }
  void broadcast(void* data, std::size_t bytes, int root) override {
    auto* p = static_cast<char*>(data);
    constexpr std::size_t kChunk = std::size_t{1} << 30;  // MPI counts are int
    for (std::size_t off = 0; off < bytes; off += kChunk)
      MPI_Bcast(p + off, static_cast<int>(std::min(kChunk, bytes - off)), MPI_BYTE, root, MPI_COMM_WORLD);
  }
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  void combine_spans(std::vector<meshsim::runtime::TaskSpan>& spans) override {
    std::vector<std::int64_t> starts;
    std::vector<std::int64_t> ends;
    for (const auto& s : spans) {
      starts.push_back(s.start.count_ps());
      ends.push_back(s.end.count_ps());
    }
    const int n = static_cast<int>(spans.size());
    MPI_Allreduce(MPI_IN_PLACE, starts.data(), n, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, ends.data(), n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    for (std::size_t i = 0; i < spans.size(); ++i) {
      spans[i].start = meshsim::Time::ps(starts[i]);
      spans[i].end = meshsim::Time::ps(ends[i]);
    }
  }
  std::vector<std::string> gather(const std::string& mine, int root) override {
    if (mine.size() > static_cast<std::size_t>(INT32_MAX))
      MPI_Abort(MPI_COMM_WORLD, 3);  // MPI counts are int
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<std::size_t>(size_));
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, MPI_COMM_WORLD);
    std::vector<int> at(lens.size(), 0);
    std::int64_t total = 0;
    for (std::size_t r = 0; r < lens.size(); ++r) {
      at[r] = static_cast<int>(total);
      total += lens[r];
    }
    if (rank_ == root && total > INT32_MAX) MPI_Abort(MPI_COMM_WORLD, 3);
    std::string all(rank_ == root ? static_cast<std::size_t>(total) : 0, '\0');
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), at.data(), MPI_CHAR, root,
                MPI_COMM_WORLD);
    std::vector<std::string> out;
    if (rank_ == root)
      for (std::size_t r = 0; r < lens.size(); ++r)
        out.push_back(all.substr(static_cast<std::size_t>(at[r]), static_cast<std::size_t>(lens[r])));
    return out;
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    MpiWorld world;
    meshsim::runtime::set_distributed(&world);
    if (world.rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) rc = 3;
    if (rc == 0) rc = meshsim::cli::run_cli(argc, argv);
    meshsim::runtime::set_distributed(nullptr);
    if (rc != 0 && world.size() > 1) MPI_Abort(MPI_COMM_WORLD, rc);
  }
  MPI_Finalize();
  return rc;
}
