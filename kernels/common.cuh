// Device helpers shared by the kernel files: f16 <-> f32 conversion, grid sizing, block reductions.
// Included only by .cu files (it holds device code); host code includes the per-op .cuh launchers.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "loom/error.hpp"
#include "loom/tensor.hpp"

namespace loom::kernels {

// Storage types by element size, for ops that only move bytes.
template <int Bytes>
struct bits_of;
template <>
struct bits_of<1> {
  using type = std::uint8_t;
};
template <>
struct bits_of<2> {
  using type = std::uint16_t;
};
template <>
struct bits_of<4> {
  using type = std::uint32_t;
};
template <>
struct bits_of<8> {
  using type = std::uint64_t;
};

// Arithmetic is always done in f32; storage may be f16.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

constexpr int kBlockThreads = 256;

// Blocks for a grid-stride loop over n items. Capped so the launch is always legal; the loops
// cover the rest. n must be > 0: callers return early on empty tensors (a 0-block launch fails).
inline unsigned grid_for(std::int64_t n, int threads = kBlockThreads) {
  constexpr std::int64_t kMaxBlocks = 1 << 20;
  std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Blocks for a kernel that gives each block whole rows, looping when there are more rows than blocks.
inline unsigned row_grid(std::int64_t rows) {
  constexpr std::int64_t kMaxBlocks = 1 << 20;
  return static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
}

__device__ __forceinline__ std::int64_t global_thread_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Block-wide reductions; every thread gets the result. blockDim.x must be a multiple of 32.
// `scratch` is 32 floats of shared memory; the trailing barrier lets the caller reuse it at once.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  v = warp_sum(v);
  __syncthreads();
  return v;
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  v = warp_max(v);
  __syncthreads();
  return v;
}

// Launchers are only reached after a kernel constructor accepted the dtype; reaching this is a bug.
[[noreturn]] inline void throw_unhandled_dtype(const char* launcher, DType dtype) {
  throw Error(ErrorCode::internal,
              std::string(launcher) + ": dtype " + std::string(dtype_name(dtype)) + " reached the launcher");
}

}  // namespace loom::kernels
