// Launchers for the selecting pointwise ops: Clip with run-time bounds and broadcasting Where.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// y[i] = min(max(x[i], *low), *high) for i < n. low and high are device pointers to one element
// of `dtype`, or nullptr for no bound. min > max gives max (as numpy.clip); NaN stays NaN. dtype
// f32, f16, i32 or i64.
void launch_clip(const void* x, const void* low, const void* high, void* y, DType dtype, std::size_t n,
                 cudaStream_t stream);

inline constexpr int kMaxWhereRank = 8;

// The output's dims and the element strides of condition, X and Y along them (0 where broadcast).
struct WhereLayout {
  int rank = 0;
  std::int64_t dims[kMaxWhereRank] = {};
  std::int64_t strides[3][kMaxWhereRank] = {};  // condition, X, Y
};

// out = condition ? x : y elementwise over `layout`; condition is bool (one byte), x, y and out
// hold elements of `element_bytes` (1, 2, 4 or 8), whatever their dtype.
void launch_where(const void* condition, const void* x, const void* y, void* out, std::size_t element_bytes,
                  const WhereLayout& layout, cudaStream_t stream);

}  // namespace loom::kernels
