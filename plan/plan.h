#pragma once
// The Plan: the one IR that planners produce and that both the simulator
// (sim::simulate) and the real runtime execute. Format `meshsim.plan/1`.
//
// A plan is a DAG of tasks over named devices ("h0/gpu3"):
//   compute     a `device` busy for `duration`, or for `flops` / `bytes`
//               under the device's roofline model; or several `devices`
//               each running that same kernel, in lockstep (the tensor-
//               parallel ranks of a layer): it starts when all of them are
//               free and takes the slowest one's time
//   send        point-to-point: src → dst, `size` bytes; src = dst is a
//               local copy between two buffers of one device (its memory
//               reads and writes `size` bytes)
//   broadcast   root → receivers along a chain (the order given), pipelined
//               in `chunk`-byte pieces (NCCL: 512 KiB)
//   collective  all_gather, reduce_scatter, all_reduce, all_to_all over a
//               group, run as the collective table (plan/collective.h) says:
//               `algorithm` (ring, tree, nvls, nvls_tree, direct), `protocol`
//               (ll, ll128, simple) and `channels`, each left to the table's
//               selection on the topology when absent. `size` follows
//               nccl-tests: all_reduce the buffer; all_gather the whole
//               gathered output; reduce_scatter the whole input; all_to_all
//               all the bytes one rank sends (its own share included). The
//               ring visits hosts in the group's order; inside a host it
//               follows NVLink (sim/ring_order.h) unless `ring_order` is
//               "listed", which keeps the group's order as given.
// Ordering: `deps` name tasks that must finish first; each task also runs
// on a `stream` (default 0) of every device it involves, and tasks on one
// (device, stream) run one at a time in plan order, as on a CUDA stream.
//
// Data-moving tasks may carry their payload: which global tensor, which
// hyper-rectangle of it ([begin, end) per dimension), from which buffer
// (and byte offset) to which buffer. A collective's payload lists every
// (member -> member) region it moves. The simulator needs only the byte
// count; the runtime moves and verifies the real bytes. A send's regions
// add up to its size; a broadcast's payload has one region of `size` bytes
// per receiver.
//
// Reductions. A tensor may be the sum of `parts` contributions (the
// gradients of data-parallel ranks, say); a buffer that declares a box of
// such a tensor may declare which `part` it starts out holding. In an
// all_reduce or reduce_scatter task, a region marked `reduce: sum` reads a
// part buffer and adds into its destination: the destination's elements end
// up as the sum, over every sum region of the task that writes them, of
// their sources. Part buffers are inputs that no region writes (a run can
// be repeated and leaves the same bytes); everywhere else an element of a
// tensor of parts stands for the whole sum.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/units.h"
#include "plan/collective.h"

namespace meshsim::plan {

enum class TaskKind : std::uint8_t { compute, send, broadcast, collective };
inline constexpr EnumNames<TaskKind, 4> kTaskKindNames{"task kind",
                                                       {{{TaskKind::compute, "compute"},
                                                         {TaskKind::send, "send"},
                                                         {TaskKind::broadcast, "broadcast"},
                                                         {TaskKind::collective, "collective"}}}};
[[nodiscard]] inline std::string_view to_string(TaskKind k) {
  return kTaskKindNames.name(k);
}

/// Element types, with their size in bytes.
enum class DType : std::uint8_t { f32, f16, bf16, f64, i32, i8, u8 };
// Each type has one name (the first entry) and the aliases people write:
// the datasheets' fp32/fp16/fp64, NumPy's float32/int8/..., PyTorch's half,
// float, double, int and byte. Every reader of a dtype (files, --tensor) uses
// this table.
inline constexpr EnumNames<DType, 22> kDTypeNames{
    "dtype",
    {{{DType::f32, "f32"},     {DType::f16, "f16"},       {DType::bf16, "bf16"}, {DType::f64, "f64"},
      {DType::i32, "i32"},     {DType::i8, "i8"},         {DType::u8, "u8"},     {DType::f32, "fp32"},
      {DType::f32, "float32"}, {DType::f32, "float"},     {DType::f16, "fp16"},  {DType::f16, "float16"},
      {DType::f16, "half"},    {DType::bf16, "bfloat16"}, {DType::f64, "fp64"},  {DType::f64, "float64"},
      {DType::f64, "double"},  {DType::i32, "int32"},     {DType::i32, "int"},   {DType::i8, "int8"},
      {DType::u8, "uint8"},    {DType::u8, "byte"}}}};
[[nodiscard]] inline std::string_view to_string(DType d) {
  return kDTypeNames.name(d);
}
/// The type of math, reductions, kernels and models wherever a file or a
/// caller names none: f16, the half-precision type that every GPU meshsim
/// models runs on its tensor cores (Volta has no bf16). Tensors, which
/// are buffers rather than math, default to f32 (Tensor below).
inline constexpr DType kDefaultMathDType = DType::f16;
[[nodiscard]] std::int64_t dtype_size(DType d);

/// The classes GPUs have separate peaks for: fp32 (also i32), fp16 (f16
/// and bf16, tensor cores), fp64, int8 (i8, u8).
enum class DTypeClass : std::uint8_t { fp32, fp16, fp64, int8 };
inline constexpr std::size_t kDTypeClasses = 4;
inline constexpr EnumNames<DTypeClass, kDTypeClasses> kDTypeClassNames{"dtype class",
                                                                       {{{DTypeClass::fp32, "fp32"},
                                                                         {DTypeClass::fp16, "fp16"},
                                                                         {DTypeClass::fp64, "fp64"},
                                                                         {DTypeClass::int8, "int8"}}}};
[[nodiscard]] DTypeClass dtype_class(DType d);

/// The most contributions a tensor may sum (plan loader's limit): the runtime's
/// test values stay exact in every dtype (layout.h).
inline constexpr int kMaxParts = 63;
/// The most elements a tensor may have (docs/limits.md): 10^15, far past any
/// model's, and small enough that its bytes fit in an int64 for every dtype.
inline constexpr double kMaxTensorElements = 1e15;

/// The kernels of a compute task, when its planner knows them
/// (plan/kernels.h): GEMMs, a batch of m × n × k products each; fused
/// attention kernels; memory-bound kernels, the bytes each reads and
/// writes; one dtype; and the host work a framework spends launching each.
struct KernelList {
  struct Gemm {
    double m = 0;
    double n = 0;
    double k = 0;
    double batch = 1;
    bool fp8 = false;  // operands in FP8 (Transformer Engine's recipe), output in the list's dtype
    friend bool operator==(const Gemm&, const Gemm&) = default;
    /// 2·m·n·k·batch: two FLOPs per multiply-add.
    [[nodiscard]] double flops() const { return 2 * m * n * k * batch; }
  };
  /// One fused attention kernel (FlashAttention, cuDNN's fused attention):
  /// `batch` independent heads, `queries` rows each, every query against
  /// `keys` keys on average (a causal mask's skipped tiles left out) of
  /// `head_dim` elements. A forward runs two such products (scores, then
  /// the weighted values); a backward five (the scores again, then the
  /// gradients of the values, the probabilities, the queries and the keys).
  /// It reads and writes its operands once: a forward Q, K, V and O, a
  /// backward those, dO, dQ, dK and dV, queries × head_dim elements each
  /// per head (keys and values as many rows as queries: an approximation
  /// for caches and context parallelism, where they hold more).
  struct Attention {
    double batch = 1;
    double queries = 0;
    double keys = 0;
    double head_dim = 0;
    bool backward = false;
    friend bool operator==(const Attention&, const Attention&) = default;
    [[nodiscard]] double products() const { return backward ? 5 : 2; }
    [[nodiscard]] double flops() const { return 2 * batch * queries * keys * head_dim * products(); }
    [[nodiscard]] double elements() const { return (backward ? 8 : 4) * batch * queries * head_dim; }
  };
  std::vector<Gemm> gemms;
  std::vector<Attention> attention;
  std::vector<Bytes> memory_bytes;  // one memory-bound kernel each
  DType dtype = kDefaultMathDType;
  /// The host's work per kernel launched (an eager framework's Python and
  /// dispatch); zero when the host keeps ahead of the GPU (a CUDA graph
  /// replays the list without it). The list takes at least launches() × it.
  Time host_per_kernel{};
  friend bool operator==(const KernelList&, const KernelList&) = default;

  /// Σ FLOPs over the GEMMs and the attention kernels.
  [[nodiscard]] double flops() const;
  /// Σ memory_bytes (the GEMMs' and attention's operand traffic is not counted).
  [[nodiscard]] Bytes bytes() const;
  /// Kernels launched: GEMMs, attention kernels and memory-bound kernels.
  [[nodiscard]] std::size_t launches() const { return gemms.size() + attention.size() + memory_bytes.size(); }
};

struct KernelSet {
  std::string name;
  KernelList kernels;
  friend bool operator==(const KernelSet&, const KernelSet&) = default;
};

/// [begin, end) per dimension: a hyper-rectangle of a tensor.
using Box = std::vector<std::pair<std::int64_t, std::int64_t>>;

struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::f32;
  int parts = 1;  // > 1: the element-wise sum of this many contributions
  [[nodiscard]] Bytes bytes() const;
};

/// A device buffer. It may declare that it holds one box of a tensor,
/// row-major (a device's tile): regions then read or write their box at its
/// place inside the buffer's box (offset 0, box inside the buffer's box), so
/// a region need not be contiguous in the buffer. A buffer without a box
/// holds each region contiguously at the region's offset.
struct Buffer {
  std::string name;
  std::size_t device = 0;  // index into Plan::devices
  Bytes size;
  std::optional<std::size_t> tensor;  // index into Plan::tensors; none: no declared box
  Box box;
  int part = -1;  // >= 0: starts out holding this contribution of its tensor (parts > 1)
};

/// One piece of a data-moving task: a box of a global tensor, read from a
/// source buffer at an offset and written to a destination buffer. The
/// box is laid out contiguously (row-major over the box) in both buffers.
struct Region {
  std::size_t tensor = 0;  // index into Plan::tensors
  Box box;
  std::size_t src_buffer = 0;  // index into Plan::buffers
  Bytes src_offset;
  std::size_t dst_buffer = 0;
  Bytes dst_offset;
  bool reduce = false;  // adds into the destination (sum) instead of copying
};

struct Task {
  std::string id;
  TaskKind kind = TaskKind::compute;
  /// Indices into Plan::devices. compute: its device(s); send: {src, dst};
  /// broadcast: {root, receivers in chain order...}; collective: the group
  /// in ring order.
  std::vector<std::size_t> devices;
  int stream = 0;
  std::vector<std::size_t> deps;  // indices into Plan::tasks

  // compute
  std::optional<Time> duration;
  double flops = 0;
  Bytes mem_bytes;
  DType dtype = kDefaultMathDType;  // compute: the math's type; collective: the type reduced

  // send, broadcast, collective
  Bytes size;
  Bytes chunk = Bytes::KiB(512);  // broadcast pipelining unit
  CollectiveOp op = CollectiveOp::all_reduce;
  std::optional<Algorithm> algorithm;  // none: the table selects
  std::optional<Protocol> protocol;    // none: the table selects
  int channels = 0;                    // 0: the table's default
  bool listed_order = false;           // ring in the group's order as given

  std::vector<Region> payload;

  // compute: index into Plan::kernel_sets, when its kernels are known
  std::optional<std::size_t> kernels;
};

/// Names are resolved once: a plan names each device once in `devices`, and
/// tasks, buffers and regions refer to devices, tensors and buffers by their
/// index. Names live only in these tables (and in the JSON, which the loader
/// resolves and the writer spells out). Executors number devices as the
/// table does: device d is the NCCL backend's rank d.
/// The most tasks a plan may have (docs/limits.md): about 4 GB of plan and
/// simulator state at roughly 0.5 KB a task. Plans built by the planners
/// are refused before they grow past it.
inline constexpr std::size_t kMaxPlanTasks = std::size_t{1} << 23;

struct Plan {
  std::string name;
  std::vector<std::string> devices;  // "h0/gpu3", each once
  std::vector<Tensor> tensors;
  std::vector<Buffer> buffers;
  std::vector<KernelSet> kernel_sets;
  std::vector<Task> tasks;
};

/// The index of device `name` in p.devices, appended when new. A linear
/// search: planners of large plans keep their own index (sim/plan_devices.h).
std::size_t device_index(Plan& p, std::string_view name);

/// MESHSIM_ASSERT that every index in `p` is in range: for plans that
/// planners build in memory (the loader checks the files it reads).
void check_indices(const Plan& p);
/// check_indices without the tasks' device and dependency lists, which
/// make_schedule checks as it reads them (plan/schedule.h): for a plan
/// whose schedule has been made.
void check_payload_indices(const Plan& p);

/// Whether any task carries a payload: a plan without one moves only byte
/// counts, so a run of it can be timed but not verified ("timing-only").
[[nodiscard]] bool carries_payload(const Plan& p);

/// Bytes of a box of a tensor (product of extents × element size).
/// The common part of two boxes of one tensor; an empty Box when they are disjoint.
[[nodiscard]] Box intersect(const Box& a, const Box& b);
[[nodiscard]] Bytes box_bytes(const Tensor& t, const Box& box);
/// Bytes a region moves: box_bytes of its tensor and box.
[[nodiscard]] Bytes region_bytes(const Plan& p, const Region& r);

}  // namespace meshsim::plan
