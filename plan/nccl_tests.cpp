#include "plan/nccl_tests.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input_file.h"

namespace meshsim::plan {

namespace {

struct TestName {
  std::string_view test;
  std::string_view op;
};
constexpr std::array<TestName, 6> kTests{{{"all_reduce_perf", "allreduce"},
                                          {"all_gather_perf", "allgather"},
                                          {"reduce_scatter_perf", "reducescatter"},
                                          {"alltoall_perf", "alltoall"},
                                          {"broadcast_perf", "broadcast"},
                                          {"sendrecv_perf", "sendrecv"}}};

// A line without MPI's "[1,0]<stdout>:" or a rank's "[0] " in front.
std::string without_prefix(const std::string& line) {
  static const std::regex prefix(R"(^(\[\d+,\d+\]<std(out|err)>:|\[\d+\] ))");
  return std::regex_replace(line, prefix, "", std::regex_constants::format_first_only);
}

bool integer(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

double number(const std::string& s, const std::string& file, std::size_t line) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || !(v >= 0))
    throw ConfigError(file, fmt::format("line {}", line),
                      fmt::format("\"{}\" is not a number nccl-tests prints", s));
  return v;
}

}  // namespace

std::vector<std::string> NcclTestsRun::hosts() const {
  std::vector<std::string> out;
  for (const auto& r : ranks)
    if (std::find(out.begin(), out.end(), r.host) == out.end()) out.push_back(r.host);
  return out;
}

std::string nccl_tests_op(std::string_view test) {
  for (const auto& t : kTests)
    if (t.test == test) return std::string(t.op);
  return "";
}

std::string nccl_tests_name(std::string_view op) {
  for (const auto& t : kTests)
    if (t.op == op) return std::string(t.test);
  return "";
}

NcclTestsRun parse_nccl_tests(std::string_view text, const std::string& file) {
  static const std::regex starting(R"(^# Collective test starting: (\S+))");
  static const std::regex rank_line(
      R"(^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.*\S)\s*$)");
  NcclTestsRun r;
  std::istringstream in{std::string(text)};
  std::string raw;
  std::size_t no = 0;
  while (std::getline(in, raw)) {
    ++no;
    const std::string line = without_prefix(raw);
    std::smatch m;
    if (std::regex_search(line, m, starting)) {
      r.test = m[1];
      continue;
    }
    if (std::regex_match(line, m, rank_line)) {
      r.ranks.push_back({std::stoi(m[1]), m[2], std::stoi(m[3]), m[4]});
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() < 2 || !integer(w[0]) || !integer(w[1])) continue;  // NCCL INFO lines and the like
    if (w.size() < 13)
      throw ConfigError(file, fmt::format("line {}", no),
                        "a row has size, count, type, redop, root, then time, algbw, busbw and #wrong out of "
                        "place and in place (nccl-tests 2.13 or later)");
    NcclTestsRow row;
    row.size = Bytes(std::stoll(w[0]));
    row.count = std::stoll(w[1]);
    row.type = w[2];
    row.redop = w[3];
    row.root = w[4] == "-1" ? -1 : static_cast<int>(number(w[4], file, no));
    row.time = Time::from_seconds(number(w[5], file, no) * 1e-6);
    row.algbw_GBps = number(w[6], file, no);
    row.busbw_GBps = number(w[7], file, no);
    row.time_in_place = Time::from_seconds(number(w[9], file, no) * 1e-6);
    if (row.size.count() <= 0 || row.time <= Time::zero())
      throw ConfigError(file, fmt::format("line {}", no), "a row's size and time are greater than zero");
    r.rows.push_back(std::move(row));
  }
  if (r.test.empty()) {  // older versions name the test only in the binary's name
    const std::string stem = std::filesystem::path(file).filename().string();
    for (const auto& t : kTests)
      if (stem.rfind(t.test, 0) == 0) r.test = std::string(t.test);
  }
  if (r.test.empty())
    throw ConfigError(
        file, "",
        "cannot tell which test wrote this: it has no \"# Collective test starting\" line; name the "
        "file after the test (all_reduce_perf.txt, ...)");
  r.op = nccl_tests_op(r.test);
  if (r.op.empty())
    throw ConfigError(file, "",
                      fmt::format("{} is not a test meshsim times (it times {})", r.test,
                                  "all_reduce, all_gather, reduce_scatter, alltoall, broadcast, sendrecv"));
  if (r.ranks.empty())
    throw ConfigError(file, "", "no \"#  Rank ... on HOST device D\" lines: they say where each rank ran");
  if (r.rows.empty()) throw ConfigError(file, "", "no result rows");
  std::sort(r.ranks.begin(), r.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < r.ranks.size(); ++i)
    if (r.ranks[i].rank != static_cast<int>(i))
      throw ConfigError(file, "", fmt::format("the rank lines skip or repeat rank {}", i));
  return r;
}

NcclTestsRun load_nccl_tests_file(const std::string& file) {
  return parse_nccl_tests(read_input_file(file, "nccl-tests output"), file);
}

std::string nccl_tests_text(const NcclTestsRun& r) {
  std::string out = fmt::format(
      "# nccl-tests version 2.19.6 (written by meshsim from a prediction)\n"
      "# Collective test starting: {}\n#\n# Using devices\n",
      r.test);
  for (const auto& k : r.ranks)
    out += fmt::format("#  Rank {:2d} Group  0 Pid {:6d} on {:>10} device {:2d} [0000:00:00] {}\n", k.rank,
                       k.rank + 1, k.host, k.device, k.gpu);
  out +=
      "#\n"
      "#                                                              out-of-place                       "
      "in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw"
      "   busbw  #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)"
      "  (GB/s)\n";
  double sum = 0;
  for (const auto& w : r.rows) {
    const std::string block = fmt::format("  {:7.2f}  {:6.2f}  {:6.2f}  {:6d}", w.time.seconds() * 1e6,
                                          w.algbw_GBps, w.busbw_GBps, 0);
    out += fmt::format("{:12d}  {:12d}  {:>8}  {:>6}  {:6d}{}{}\n", w.size.count(), w.count, w.type, w.redop,
                       w.root, block, block);
    sum += 2 * w.busbw_GBps;
  }
  out += fmt::format(
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {:g} \n#\n# Collective test concluded: {}\n",
      r.rows.empty() ? 0.0 : sum / static_cast<double>(2 * r.rows.size()), r.test);
  return out;
}

}  // namespace meshsim::plan
