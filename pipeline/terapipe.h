#pragma once
// TeraPipe (Li et al., ICML 2021): token-level
// pipelining. A causal Transformer's sequence of L tokens is cut into
// slices that flow through K pipeline stages one after another; slice i
// attends to the cached keys and values of the slices before it, so later
// slices cost more.
//
// Objective, for slices with per-stage times t_1..t_n (over every
// microbatch of the batch): T = Σ t_i + (K − 1)·max t_i.
//
// The dynamic program, exactly as the paper's: for a cap t_max, S(0) = 0,
// S(i) = min over k of S(i − k) + t(k, i − k) with t(k, i − k) ≤ t_max (a
// slice of k units after i − k units of context); T(t_max) = S(L) + (K −
// 1)·t_max. Caps are the distinct slice times in increasing order; the
// search stops once K·t_max reaches the best T (a cap that the best slicing
// under it does not reach is matched by a smaller cap, and one it reaches
// has S(L) ≥ t_max), or once the best time without any cap plus (K − 1)·
// t_max does (no cap's sum is below the uncapped one, and the bound grows
// with the cap). The batch is split into microbatches by a knapsack on
// top: under each cap, f(b) = min over the first microbatch's size j of
// f(b − j) + S_j(L). Lengths are in units of `granularity` tokens.
//
// The slice cost (cost model below) is the stage's forward and backward
// time: for each of its layers, its kernels (model/layer_kernels.h: the
// GEMMs timed in tiles and waves over the GPU's SMs, the attention GEMMs
// reading the cached keys and values, the memory-bound kernels, a launch
// each, the weight-gradient accumulation every slice's backward pass adds,
// since TeraPipe's code runs one autograd backward per slice, and its
// key and value cache copies and the extra kernels of its attention,
// kv_cache_kernels and terapipe_attention_kernels); four
// tensor-parallel all-reduces of b·l·h
// elements per layer; the activation sent forward and its gradient sent
// back across the slowest stage boundary; and, with tensor parallelism,
// each of them broadcast from the rank that received it to the stage's
// other tensor ranks, as TeraPipe's code does. An eager framework also works
// on the host for every kernel it launches (host_per_kernel); the GPU
// cannot run ahead of it, so a layer takes the longer of its GPU time
// (kernels and all-reduces) and its host time (kernels and all-reduce
// calls × host_per_kernel): thin slices become host-bound.
// The all-reduce and send costs are
// α + β·bytes fitted from two simulations on the topology, with every data
// replica's transfer in flight at once (the replicas' stage boundaries
// share the fabric).
//
// Data parallelism: d replicas each pipeline batch / d sequences; GPU of
// (stage p of K, replica r, tensor rank t) is first + (r·K + p)·t_deg + t
// (replicas outermost, as TeraPipe's code groups ranks). Once
// the backward is done every (stage, tensor rank) all-reduces its gradients
// (the stage's parameters / t) over the replicas, all at once, outside the
// pipeline: the iteration is T + that all-reduce, simulated on the topology,
// + the weight update (terapipe_update_time).
//
// Memory: a microbatch of b sequences keeps, on each GPU, b × the stored
// activations of the stage's layers (model/model.h), beside the
// weights, gradients and optimizer state (kTrainingBytesPerParam per
// parameter / t). Microbatches larger than the GPU's memory allows are not
// considered (max_microbatch_size).

#include <functional>
#include <string>
#include <vector>

#include "model/model.h"
#include "sim/compute_model.h"
#include "topology/topology.h"

namespace meshsim::pipeline {

/// α + β·bytes (seconds).
struct AlphaBeta {
  double alpha = 0;
  double beta = 0;
  [[nodiscard]] double time(double bytes) const { return alpha + beta * bytes; }
};

/// Per-stage time of a slice: `len` tokens after `ctx` tokens of context,
/// for `b` sequences (seconds).
using SliceCostFn = std::function<double(int len, int ctx, int b)>;

struct SliceCostModel {
  int layers_per_stage = 1;
  int tp = 1;
  int dp = 1;
  AlphaBeta tp_allreduce;
  AlphaBeta tp_broadcast;  // a received activation or gradient spread over the stage's tensor ranks
  AlphaBeta stage_send;
  double grad_allreduce_s = 0;  // the replicas' gradient all-reduce, once per iteration
  double update_s = 0;          // the weight update after it, once per iteration (terapipe_update_time)
  double state_bytes = 0;       // per GPU: weights, gradients, optimizer state
  double activation_bytes = 0;  // per GPU per sequence of a microbatch
  double host_per_kernel = 0;   // seconds of host work per kernel the framework launches (0: none)
};

/// The weight update TeraPipe's code runs on each GPU after the backward
/// (and the replicas' all-reduce), as memory-bound work on `dev`: for an
/// f16 model, mixed precision, 48 bytes per parameter (the f16 gradient
/// copied into the f32 master's, 6, and unscaled in place, 8; apex's fused
/// Adam on the master, reading weight, gradient and both moments and
/// writing three, 28; the master copied back to f16, 6); otherwise
/// torch.optim.Adam in place, 28 bytes per parameter.
[[nodiscard]] double terapipe_update_time(const model::Model& m, const SliceCostModel& c,
                                          const sim::DeviceModel& dev);

/// The cost model on `topo` with `dp` replicas (layout above) from
/// `first_gpu`. UsageError for non-GPT models, layers not divisible by K,
/// or too few GPUs.
[[nodiscard]] SliceCostModel slice_cost_model(const model::Model& m, const topology::Topology& topo, int pp,
                                              int tp, int first_gpu = 0, int dp = 1);

/// The largest microbatch (sequences) whose memory fits in `capacity`
/// bytes per GPU; 0 when not even one sequence fits.
[[nodiscard]] int max_microbatch_size(const SliceCostModel& c, double capacity);
/// The slice cost on GPU model `dev`. It keeps the times of the GEMM shapes
/// it has timed (its copies share them): call it from one thread at a time.
[[nodiscard]] SliceCostFn slice_cost(const model::Model& m, const SliceCostModel& c,
                                     const sim::DeviceModel& dev);

struct TokenSlicing {
  std::vector<int> microbatches;         // sizes, summing to the batch
  std::vector<std::vector<int>> slices;  // per microbatch, slice lengths in tokens
  double time = 0;                       // T of this slicing
  double max_slice = 0;                  // its largest slice time
  int caps_tried = 0;                    // DP only
};

/// T = Σ t + (K − 1)·max t of a given slicing.
[[nodiscard]] double slicing_time(const TokenSlicing& s, int K, const SliceCostFn& cost);

/// UsageError when terapipe_dp's tables for these sizes would pass 2 GB (a
/// table of every slice per microbatch size, and its slices in order of
/// time), or for sizes no slicing has: what terapipe_dp refuses, checked
/// before any slice is costed.
void check_terapipe_dp(int tokens, int batch, int K, int granularity, int max_microbatch);

/// How far the DP's search over slice-time caps has come: (caps decided,
/// distinct caps); done == total at the end.
using CapProgress = std::function<void(std::size_t, std::size_t)>;

/// The DP with the microbatch knapsack, over microbatches of at most
/// `max_microbatch` sequences (0: any). `tokens` must be a multiple of
/// `granularity`; UsageError otherwise (and as check_terapipe_dp).
[[nodiscard]] TokenSlicing terapipe_dp(int tokens, int batch, int K, const SliceCostFn& cost,
                                       int granularity = 8, int max_microbatch = 0,
                                       const CapProgress& progress = {});

/// Baselines: equal microbatches (every divisor of the batch up to
/// `max_microbatch`, 0: any), each cut into n equal slices; `max_slices` =
/// 1 is "no slicing"; otherwise every n dividing tokens / granularity is
/// tried. The best one.
[[nodiscard]] TokenSlicing uniform_slicing(int tokens, int batch, int K, const SliceCostFn& cost,
                                           int max_slices, int granularity = 8, int max_microbatch = 0);

/// The paper's ablation: microbatches of one sequence, each cut into
/// exactly `slices` equal slices (a divisor of tokens / granularity;
/// UsageError otherwise).
[[nodiscard]] TokenSlicing fixed_uniform_slicing(int tokens, int batch, int K, const SliceCostFn& cost,
                                                 int slices, int granularity = 8);

}  // namespace meshsim::pipeline
