#include "tools/cli/search_store.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "runtime/distributed.h"

namespace meshsim::cli {

namespace ps = search;
namespace fs = std::filesystem;

namespace {

bool is_partial(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.starts_with("results.partial") && name.ends_with(".csv");
}

// A run stopped while it appended a row leaves that row cut: the last line
// of a partial file without its line end. It is left out (its
// configuration runs again), and said so.
void read_rows(const fs::path& file, std::map<std::string, ps::Result>& out) {
  std::ifstream in(file);
  if (!in) return;
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (in.eof() && !line.empty() && is_partial(file)) {
      fmt::print(
          stderr,
          "warning: {}: line {} is cut (the run stopped while writing it); its configuration runs again\n",
          file.string(), n);
      break;
    }
    if (n == 1 && line + "\n" == ps::csv_header()) continue;
    if (line.empty()) continue;
    ps::KeyedResult k = ps::parse_csv_row(line, file.string(), n);
    out[k.key] = std::move(k.result);
  }
}

// The file without a cut last row (one without its line end), so that
// rows appended from here on start on a line of their own.
void drop_cut_row(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size == 0) return;
  std::ifstream in(path, std::ios::binary);
  // Back from the end, a block at a time, to the last line end.
  std::uintmax_t end = size;
  std::string block;
  std::uintmax_t keep = 0;
  while (end > 0) {
    const std::uintmax_t start = end > 4096 ? end - 4096 : 0;
    block.resize(static_cast<std::size_t>(end - start));
    in.seekg(static_cast<std::streamoff>(start));
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    if (!in) return;  // unreadable: load_search_rows says so
    if (end == size && block.back() == '\n') return;
    if (const auto at = block.rfind('\n'); at != std::string::npos) {
      keep = start + at + 1;
      break;
    }
    end = start;
  }
  in.close();
  fs::resize_file(path, keep, ec);
  if (ec) throw UsageError(fmt::format("cannot mend {} (its last row is cut): {}", path, ec.message()));
}

}  // namespace

std::map<std::string, ps::Result> load_search_rows(const std::string& dir) {
  std::map<std::string, ps::Result> out;
  if (!fs::is_directory(dir)) return out;
  read_rows(fs::path(dir) / "results.csv", out);
  for (const auto& e : fs::directory_iterator(dir))
    if (is_partial(e.path())) read_rows(e.path(), out);
  return out;
}

PartialResults::PartialResults(const std::string& dir, int rank, int ranks) {
  fs::create_directories(dir);
  const std::string name = ranks > 1 ? fmt::format("results.partial.{}.csv", rank) : "results.partial.csv";
  const std::string path = (fs::path(dir) / name).string();
  drop_cut_row(path);
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) throw UsageError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
}

PartialResults::~PartialResults() {
  if (file_ != nullptr) std::fclose(file_);
}

void PartialResults::append(const std::string& row) {
  if (file_ == nullptr) return;
  std::fputs(row.c_str(), file_);
  std::fflush(file_);
}

void remove_partial_results(const std::string& dir) {
  if (!fs::is_directory(dir)) return;
  std::vector<fs::path> partial;
  for (const auto& e : fs::directory_iterator(dir))
    if (is_partial(e.path())) partial.push_back(e.path());
  for (const auto& p : partial) fs::remove(p);
}

void gather_search_rows(std::vector<ps::Result>& results, const std::vector<std::size_t>& mine,
                        const std::vector<std::string>& keys) {
  runtime::Distributed* d = runtime::distributed();
  if (d == nullptr || d->size() == 1) return;
  std::string sent;
  for (std::size_t i : mine) sent += fmt::format("{}\t{}", i, ps::csv_row(results[i], keys[i]));
  const auto all = d->gather(sent, 0);
  for (std::size_t r = 1; r < all.size(); ++r) {
    std::size_t at = 0;
    while (at < all[r].size()) {
      const std::size_t end = all[r].find('\n', at);
      const std::string_view line(all[r].data() + at, end - at);
      const std::size_t tab = line.find('\t');
      std::size_t i = 0;
      std::from_chars(line.data(), line.data() + tab, i);
      MESHSIM_ASSERT(i < results.size(), "a rank sent a configuration outside the search");
      results[i] = ps::parse_csv_row(line.substr(tab + 1), fmt::format("<rank {}>", r), 0).result;
      at = end + 1;
    }
  }
}

}  // namespace meshsim::cli
