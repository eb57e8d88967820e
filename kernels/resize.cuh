// Launcher for Resize (nearest, linear, cubic) driven by per-axis tap tables computed on the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

inline constexpr int kMaxResizeRank = 8;

// Axis a's output index o reads input index index[offset[a] + o * taps[a] + t] with weight
// weight[offset[a] + o * taps[a] + t], for t < taps[a]; the tables live in device memory.
struct ResizeLayout {
  int rank = 0;
  std::int64_t out[kMaxResizeRank] = {}, in_stride[kMaxResizeRank] = {};
  std::int64_t taps[kMaxResizeRank] = {}, offset[kMaxResizeRank] = {};
  const std::int64_t* index = nullptr;
  const float* weight = nullptr;
};

// dtype f32 or f16 (f32 accumulation).
void launch_resize(const void* x, void* y, DType dtype, const ResizeLayout& layout, cudaStream_t stream);

}  // namespace loom::kernels
