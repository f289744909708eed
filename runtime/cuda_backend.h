#pragma once
// The CUDA backend: one GPU; every plan device is a virtual device whose
// buffers live in that GPU's memory (and a scratch area for payload-less
// tasks, work.h).
//
// Each (plan device, plan stream) gets a CUDA stream. Tasks are enqueued in
// Schedule order on the stream of their first device (a send: its source):
// the stream first waits on the end events of the task's predecessors, then
// records the task's start event, enqueues its work and records its end
// event. Work:
//   region copies   cudaMemcpyAsync for a single run, cudaMemcpy2DAsync for
//                   one outer dimension, cudaMemcpy3DAsync for two whose
//                   strides nest, else 2-D copies per outer index;
//   sums            (reduce: sum regions, work.h's Reductions) each source
//                   packed into a staging area of the stream, the sum kernel
//                   (kernels.h: in double, rounded once as the host backend
//                   rounds), the packed sum copied into the destination;
//   scratch copies  cudaMemcpyAsync;
//   compute         a cuBLAS GEMM (loaded at run time) of the task's FLOPs:
//                   square, n = cbrt(flops/2) rounded to a multiple of 64, in
//                   the task's dtype class (fp16/bf16 → f16/bf16 inputs with
//                   f32 accumulation, else f32); or the busy kernel for the
//                   task's duration (or compute_time, when cuBLAS is absent).
// Times come from CUDA events relative to an event recorded before the
// first task. A watchdog polls the end events: if none completes for
// `timeout`, it names the first unfinished task and throws.

#include <functional>
#include <memory>

#include "runtime/backend.h"

namespace meshsim::runtime {

struct CudaBackendOptions {
  int device = 0;
  Time timeout = Time::s(60);
  ComputeTime compute_time;  // stand-in when cuBLAS is missing
};

/// UsageError when this build has no CUDA or the machine has no usable GPU.
[[nodiscard]] std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& opts = {});

}  // namespace meshsim::runtime
