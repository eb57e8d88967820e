// Device helpers shared by the kernels that pick elements by rank (argmax.cu, topk.cu): values
// widened for comparison, a NaN test that integers pass, and a block-wide pick of the best
// (value, index) pair under the caller's order. Included only by .cu files.
#pragma once

#include <type_traits>

#include "common.cuh"

namespace loom::kernels {

// Float storage compares as f32, integer storage as int64.
template <class T>
struct ComparedAs {
  using type = long long;
};
template <>
struct ComparedAs<float> {
  using type = float;
};
template <>
struct ComparedAs<__half> {
  using type = float;
};

template <class V, class T>
__device__ __forceinline__ V widen(T v) {
  if constexpr (std::is_same_v<V, float>)
    return to_float(v);
  else
    return static_cast<V>(v);
}

template <class V>
__device__ __forceinline__ bool is_nan(V v) {
  if constexpr (std::is_same_v<V, float>)
    return isnan(v);
  else
    return false;
}

// Block-wide: every thread passes its candidate (index -1 for none) and gets back the one that
// `replaces(v, i, best_v, best_i)` ranks first. blockDim.x is a multiple of 32; `values` and
// `indices` are 32 entries of shared memory each, free again when this returns.
template <class V, class Replaces>
__device__ void block_pick(V& value, long long& index, Replaces replaces, V* values, long long* indices) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int stage = 0; stage < 2; ++stage) {
    for (int offset = 16; offset > 0; offset >>= 1) {
      const V v = __shfl_xor_sync(0xffffffffu, value, offset);
      const long long i = __shfl_xor_sync(0xffffffffu, index, offset);
      if (replaces(v, i, value, index)) {
        value = v;
        index = i;
      }
    }
    if (stage == 1) break;
    if (lane == 0) {
      values[warp] = value;
      indices[warp] = index;
    }
    __syncthreads();
    value = lane < warps ? values[lane] : V(0);
    index = lane < warps ? indices[lane] : -1;
    __syncthreads();
  }
}

}  // namespace loom::kernels
