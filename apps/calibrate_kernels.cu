// loom-gpu-calibrate's kernels: work counted exactly (FLOPs of an FMA chain, bytes of a copy), the
// device clock at each kernel's first block start and last block end, an empty kernel and a gate.
#include "calibrate_kernels.cuh"

#include <cuda_runtime.h>

#include <string>

#include "backend/cuda/cuda_check.hpp"
#include "loom/error.hpp"

namespace loom::calibrate {
namespace {

constexpr int kThreadsPerSmAsked = 2048;  // __launch_bounds__' minimum blocks: 2048 / block size
constexpr int kCopyUnroll = 4;            // 16-byte loads in flight per thread
// The gate's poll bound, for a %globaltimer that does not advance: at about 1 us per poll (the
// sleep, or a read of host memory over the bus) it ends within seconds.
constexpr unsigned kGateMaxPolls = 4'000'000;

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void stamp_block_start(unsigned long long* stamps) {
  if (threadIdx.x == 0) atomicMin(&stamps[0], globaltimer_ns());
}

// After every thread of the block has done its work.
__device__ __forceinline__ void stamp_block_end(unsigned long long* stamps) {
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&stamps[1], globaltimer_ns());
}

// chain = chain * multiplier + addend converges to addend / (1 - multiplier) = 1 from [0, 0.3]: no
// overflow, no denormals, and every value stays in [0, 1], so the sum is never -1 and `sink` is
// never written. The multiplier and addend are arguments so that nothing can be folded.
__global__ void __launch_bounds__(kComputeThreads, kThreadsPerSmAsked / kComputeThreads)
    fma_chain_kernel(float multiplier, float addend, int iterations, float* sink, unsigned long long* stamps) {
  stamp_block_start(stamps);
  float chain[kFmaChains];
#pragma unroll
  for (int k = 0; k < kFmaChains; ++k) chain[k] = 1e-3f * static_cast<float>(threadIdx.x + k);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int k = 0; k < kFmaChains; ++k) chain[k] = fmaf(chain[k], multiplier, addend);
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < kFmaChains; ++k) sum += chain[k];
  if (sum == -1.0f) sink[0] = sum;
  stamp_block_end(stamps);
}

// Each thread moves elements first, first + stride, ... (elements is a multiple of the stride), with
// kCopyUnroll loads issued before their stores. No __restrict__: a pass reads what the one before
// wrote (the same thread's elements), which the compiler must see.
template <int Threads>
__global__ void __launch_bounds__(Threads, kThreadsPerSmAsked / Threads)
    copy_kernel(float4* a, float4* b, std::size_t elements, int passes, unsigned long long* stamps) {
  stamp_block_start(stamps);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * Threads;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * Threads + threadIdx.x;
  for (int pass = 0; pass < passes; ++pass) {
    const float4* from = pass % 2 == 0 ? a : b;
    float4* to = pass % 2 == 0 ? b : a;
    std::size_t i = first;
    for (; i + (kCopyUnroll - 1) * stride < elements; i += kCopyUnroll * stride) {
      float4 values[kCopyUnroll];
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) values[u] = from[i + u * stride];
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) to[i + u * stride] = values[u];
    }
    for (; i < elements; i += stride) to[i] = from[i];
  }
  stamp_block_end(stamps);
}

__global__ void empty_kernel() {}

__global__ void gate_kernel(const volatile unsigned* flag, unsigned* timed_out, unsigned long long limit_ns) {
  const unsigned long long start = globaltimer_ns();
  for (unsigned poll = 0; *flag == 0; ++poll) {
    if (poll >= kGateMaxPolls || globaltimer_ns() - start > limit_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}

const void* kernel_function(KernelKind kind) {
  switch (kind) {
    case KernelKind::compute:
      return reinterpret_cast<const void*>(&fma_chain_kernel);
    case KernelKind::copy:
      return reinterpret_cast<const void*>(&copy_kernel<kCopyThreads>);
    case KernelKind::wide_copy:
      return reinterpret_cast<const void*>(&copy_kernel<kWideCopyThreads>);
  }
  throw Error(ErrorCode::internal, "calibrate: unknown kernel kind");
}

}  // namespace

int threads_per_block(KernelKind kind) noexcept {
  switch (kind) {
    case KernelKind::compute:
      return kComputeThreads;
    case KernelKind::copy:
      return kCopyThreads;
    case KernelKind::wide_copy:
      return kWideCopyThreads;
  }
  return 0;
}

const char* kernel_kind_name(KernelKind kind) noexcept {
  switch (kind) {
    case KernelKind::compute:
      return "fma_chain";
    case KernelKind::copy:
      return "copy";
    case KernelKind::wide_copy:
      return "wide_copy";
  }
  return "?";
}

KernelAttributes kernel_attributes(KernelKind kind) {
  const void* function = kernel_function(kind);
  cudaFuncAttributes attributes{};
  LOOM_CUDA_CHECK(cudaFuncGetAttributes(&attributes, function));
  KernelAttributes result;
  result.registers_per_thread = attributes.numRegs;
  result.static_shared_bytes = attributes.sharedSizeBytes;
  LOOM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&result.resident_blocks_per_sm, function,
                                                                threads_per_block(kind), 0));
  return result;
}

void launch_compute(int blocks, int iterations, bool cooperative, float* sink, unsigned long long* stamps,
                    cudaStream_t stream) {
  float multiplier = 0.999f, addend = 0.001f;
  if (cooperative) {
    void* arguments[] = {&multiplier, &addend, &iterations, &sink, &stamps};
    LOOM_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&fma_chain_kernel), dim3(blocks),
                                                dim3(kComputeThreads), arguments, 0, stream));
    return;
  }
  fma_chain_kernel<<<blocks, kComputeThreads, 0, stream>>>(multiplier, addend, iterations, sink, stamps);
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void launch_copy(KernelKind kind, int blocks, void* a, void* b, std::size_t elements, int passes,
                 unsigned long long* stamps, cudaStream_t stream) {
  const std::size_t threads = static_cast<std::size_t>(blocks) * static_cast<std::size_t>(threads_per_block(kind));
  if (blocks <= 0 || passes <= 0 || elements == 0 || elements % threads != 0)
    throw Error(ErrorCode::internal, "calibrate: launch_copy needs a positive grid and passes, and elements (" +
                                         std::to_string(elements) + ") a multiple of the grid's threads (" +
                                         std::to_string(threads) + ")");
  auto* first = static_cast<float4*>(a);
  auto* second = static_cast<float4*>(b);
  if (kind == KernelKind::wide_copy)
    copy_kernel<kWideCopyThreads><<<blocks, kWideCopyThreads, 0, stream>>>(first, second, elements, passes, stamps);
  else if (kind == KernelKind::copy)
    copy_kernel<kCopyThreads><<<blocks, kCopyThreads, 0, stream>>>(first, second, elements, passes, stamps);
  else
    throw Error(ErrorCode::internal, "calibrate: launch_copy given a kernel kind that is not a copy");
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void launch_empty(cudaStream_t stream) { empty_kernel<<<1, 32, 0, stream>>>(); }

void launch_gate(const volatile unsigned* flag, unsigned* timed_out, unsigned long long limit_ns, cudaStream_t stream) {
  gate_kernel<<<1, 1, 0, stream>>>(flag, timed_out, limit_ns);
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::calibrate
