// Random plans, valid and not, through the loader, the simulator and the
// host runtime: every outcome is a result or a user-facing error
// (ConfigError, UsageError: exit status 2), never an internal error or a
// crash (exit status 3 or a signal).

#include <cstdlib>
#include <random>
#include <tuple>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "plan/plan_json.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "sim/executor.h"
#include "topology/cluster.h"

using namespace meshsim;

namespace {

// A random plan over devices h0/gpu0 ... h1/gpu3. Two plans in five are
// "faulty": each of their choices may then be a mistake (an unknown device,
// a size without a unit or of 2^63 bytes, a box outside its tensor, a
// dependency on a later or the same task, ...). The others are meant to
// load: their boxes lie inside their tensors and their buffers, and only
// collectives carry payloads, whose regions are their own account.
class RandomPlan {
 public:
  explicit RandomPlan(std::uint32_t seed) : rng_(seed) { faulty_ = chance(0.4); }

  Json make() {
    Json p{{"format", "meshsim.plan/1"}, {"name", "fuzz"}};
    Json ts = Json::array();
    for (int i = 0, n = pick(1, 3); i < n; ++i) ts.push_back(tensor(i));
    Json bs = Json::array();
    for (std::size_t i = 0; i < ts.size(); ++i)
      for (int k = 0, n = pick(0, 3); k < n; ++k) bs.push_back(buffer(bs.size(), ts[i], static_cast<int>(k)));
    Json tasks = Json::array();
    const int n = pick(1, 12);
    for (int i = 0; i < n; ++i) tasks.push_back(task(i, n, ts, bs));
    p["tensors"] = ts;
    p["buffers"] = bs;
    p["tasks"] = tasks;
    if (bad(0.05)) p["unexpected"] = 1;
    return p;
  }

 private:
  int pick(int lo, int hi) { return hi <= lo ? lo : std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  bool bad(double p) { return faulty_ && chance(p); }
  template <typename T>
  const T& one_of(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(pick(0, static_cast<int>(v.size()) - 1))];
  }

  std::string device() {
    if (bad(0.05)) return one_of<std::string>({"h9/gpu0", "h0/nic0", "", "h0/gpu0/x"});
    return fmt::format("h{}/gpu{}", pick(0, 1), pick(0, 3));
  }
  // k different devices (faulty: perhaps a repeat).
  std::vector<std::string> devices(int k) {
    std::vector<std::string> all;
    for (int h = 0; h < 2; ++h)
      for (int g = 0; g < 4; ++g) all.push_back(fmt::format("h{}/gpu{}", h, g));
    std::shuffle(all.begin(), all.end(), rng_);
    all.resize(static_cast<std::size_t>(k));
    if (bad(0.1)) all.back() = all.front();
    if (bad(0.05)) all.back() = device();
    return all;
  }
  std::string size() {
    if (bad(0.15))
      return one_of<std::string>(
          {"0B", "-1B", "9223372036854775807B", "1e18B", "12", "1TiB", "3.5B", "1e400B"});
    return one_of<std::string>({"4B", "64B", "1KiB", "96KiB", "1MiB"});
  }
  // A box inside `shape` (faulty: perhaps not).
  Json box(const Json& shape) {
    Json b = Json::array();
    for (const auto& e : shape) {
      const int extent = e.get<int>();
      int lo = pick(0, extent - 1);
      int hi = pick(lo + 1, extent);
      if (bad(0.1)) std::tie(lo, hi) = std::pair{pick(-2, extent + 2), pick(-1, extent + 3)};
      b.push_back(Json::array({lo, hi}));
    }
    if (bad(0.05)) b.push_back(Json::array({0, 1}));
    return b;
  }
  Json tensor(int i) {
    Json shape = Json::array();
    for (int d = 0, n = pick(1, 3); d < n; ++d) shape.push_back(bad(0.03) ? pick(-1, 0) : pick(1, 16));
    Json t{{"name", fmt::format("t{}", i)},
           {"shape", shape},
           {"dtype", one_of<std::string>({"f32", "f16", "bf16", "f64", "i32", "i8", "u8"})}};
    if (chance(0.3)) t["parts"] = bad(0.1) ? pick(-1, 70) : pick(2, 4);
    return t;
  }
  // A tile holding the whole tensor (perhaps one part of it), or one in
  // three times a buffer without a box, whose regions sit at offsets.
  Json buffer(std::size_t i, const Json& tensor, int k) {
    Json b{{"name", fmt::format("b{}", i)}, {"device", device()}, {"size", bad(0.1) ? size() : "128KiB"}};
    if (chance(0.3) && k > 0) return b;
    Json whole = Json::array();
    for (const auto& e : tensor["shape"]) whole.push_back(Json::array({0, e}));
    b["tensor"] = tensor["name"];
    b["box"] = whole;
    if (tensor.contains("parts") && k == 0) b["part"] = bad(0.2) ? pick(-1, 5) : 0;
    return b;
  }
  Json region(const Json& tensors, const Json& buffers) {
    const Json& b = buffers[static_cast<std::size_t>(pick(0, static_cast<int>(buffers.size()) - 1))];
    const Json& any = tensors[static_cast<std::size_t>(pick(0, static_cast<int>(tensors.size()) - 1))];
    const std::string name =
        b.contains("tensor") ? b["tensor"].get<std::string>() : any["name"].get<std::string>();
    std::vector<const Json*> dsts;  // unboxed, or of the same tensor and not a part (faulty: any)
    for (const auto& x : buffers)
      if (bad(0.3) || !x.contains("tensor") || (x["tensor"] == name && !x.contains("part")))
        dsts.push_back(&x);
    if (dsts.empty()) dsts.push_back(&b);
    const Json& d = *dsts[static_cast<std::size_t>(pick(0, static_cast<int>(dsts.size()) - 1))];
    const Json* tensor = &tensors[0];
    for (const auto& t : tensors)
      if (t["name"] == name) tensor = &t;
    Json r{{"tensor", name},
           {"box", box((*tensor)["shape"])},
           {"src_buffer", b["name"]},
           {"dst_buffer", d["name"]}};
    if (!b.contains("tensor"))
      r["src_offset"] = bad(0.3) ? size() : one_of<std::string>({"0B", "64B", "1KiB"});
    if (!d.contains("tensor"))
      r["dst_offset"] = bad(0.3) ? size() : one_of<std::string>({"0B", "64B", "1KiB"});
    if (bad(0.1)) r["dst_offset"] = size();
    if (b.contains("part") && d.contains("tensor") && d["tensor"] == name && !d.contains("part"))
      r["reduce"] = "sum";
    if (bad(0.1)) r["reduce"] = chance(0.5) ? "sum" : "max";
    return r;
  }
  Json task(int i, int n, const Json& tensors, const Json& buffers) {
    Json t{{"id", bad(0.05) ? "k0" : fmt::format("k{}", i)}};
    const std::string kind =
        bad(0.05) ? "nope" : one_of<std::string>({"compute", "send", "broadcast", "collective"});
    t["kind"] = kind;
    if (kind == "compute") {
      t["device"] = device();
      if (chance(0.5))
        t["duration"] = bad(0.3) ? one_of<std::string>({"-1us", "1e9s", "1e400s", "5"})
                                 : one_of<std::string>({"1us", "0s", "2ms"});
      else
        t["flops"] = bad(0.3) ? one_of<double>({1e30, -1.0, 1e29}) : 1e9;
    } else if (kind == "send") {
      const auto d = devices(2);
      t["src"] = d[0];
      t["dst"] = d[1];
      t["size"] = size();
    } else if (kind == "broadcast") {
      const auto d = devices(pick(2, 4));
      t["root"] = d[0];
      t["receivers"] = std::vector<std::string>(d.begin() + 1, d.end());
      t["size"] = size();
      // Chunks of at least 1 KiB (a 1 MiB broadcast in 4 B chunks is a million flows: slow under sanitizers).
      if (chance(0.2)) t["chunk"] = bad(0.3) ? size() : one_of<std::string>({"1KiB", "96KiB", "1MiB"});
    } else if (kind == "collective") {
      t["op"] = bad(0.1) ? one_of<std::string>({"allreduce", "x"})
                         : one_of<std::string>({"all_reduce", "all_gather", "reduce_scatter", "all_to_all"});
      t["group"] = devices(pick(2, 4));
      t["size"] = size();
      if (chance(0.3))
        t["algorithm"] = one_of<std::string>({"ring", "tree", "nvls", "nvls_tree", "direct", "auto"});
      if (chance(0.3)) t["protocol"] = one_of<std::string>({"ll", "ll128", "simple", "auto"});
      if (chance(0.2)) t["channels"] = bad(0.5) ? pick(-1, 70) : pick(0, 8);
      if (!buffers.empty() && (chance(0.5) || bad(0.2))) {
        Json payload = Json::array();
        for (int k = 0, m = pick(1, 3); k < m; ++k) payload.push_back(region(tensors, buffers));
        t["payload"] = payload;
      }
    }
    if (chance(0.4)) t["stream"] = bad(0.1) ? pick(-1, 2000) : pick(0, 2);
    Json deps = Json::array();
    for (int k = 0, m = pick(0, 2); k < m && i > 0; ++k) deps.push_back(fmt::format("k{}", pick(0, i - 1)));
    if (bad(0.15)) deps.push_back(fmt::format("k{}", pick(i, n)));
    t["deps"] = deps;
    return t;
  }

  std::mt19937 rng_;
  bool faulty_ = false;
};

}  // namespace

TEST_CASE("500 random plans load, simulate and run, or are refused as the user's mistake", "[plan][fuzz]") {
  topology::ClusterSpec cs;
  cs.host_preset = "p3.8xlarge";
  cs.hosts = 2;
  const topology::Topology topo = topology::build_cluster(cs);
  int loaded = 0, simulated = 0, ran = 0;
  for (std::uint32_t seed = 0; seed < 500; ++seed) {
    const std::string text = RandomPlan(seed).make().dump();
    INFO("seed " << seed << ": " << text);
    if (std::getenv("MESHSIM_FUZZ_TRACE") != nullptr) fmt::print(stderr, "seed {}: {}\n", seed, text);
    try {
      const plan::Plan p = plan::plan_from_json(parse_json_text(text, "fuzz.json"), "fuzz.json");
      ++loaded;
      try {
        (void)sim::simulate(p, topo);
        ++simulated;
      } catch (const ConfigError&) {
      } catch (const UsageError&) {
      }
      auto backend = runtime::make_host_backend({.threads = 2, .compute_time = {}});
      (void)runtime::run_plan(p, *backend);
      ++ran;
    } catch (const ConfigError& e) {
      if (std::getenv("MESHSIM_FUZZ_TRACE") != nullptr) fmt::print(stderr, "  refused: {}\n", e.what());
    } catch (const UsageError& e) {
      if (std::getenv("MESHSIM_FUZZ_TRACE") != nullptr) fmt::print(stderr, "  refused: {}\n", e.what());
    } catch (const std::exception& e) {
      FAIL("seed " << seed << " escaped as an internal error: " << e.what());
    }
  }
  // The corpus reaches every stage, not just the loader's refusals.
  CHECK(loaded >= 150);
  CHECK(simulated >= 100);
  CHECK(ran >= 100);
  WARN(fmt::format("{} of 500 loaded, {} simulated, {} ran", loaded, simulated, ran));
}
