// Launchers for MaxPool / AveragePool (1-D to 3-D, as 3-D) and GlobalAveragePool / GlobalMaxPool.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

enum class PoolKind { max, average };

// Window geometry over 3 spatial axes (depth, height, width; 1-D and 2-D windows have leading unit
// axes), resolved by host code from the ONNX attributes: auto_pad and ceil_mode are already in the
// pads and output extents.
struct PoolParams {
  PoolKind kind = PoolKind::max;
  std::int64_t planes = 0;  // N * C
  std::int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  std::int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  std::int64_t pad_begin[3] = {}, pad_end[3] = {};
  bool count_include_pad = false;  // average only
};

// One output element per thread. dtype f32 or f16 (f32 accumulation).
void launch_pool(const void* x, void* y, DType dtype, const PoolParams& params, cudaStream_t stream);

// y[r] = mean (or max) of x[r, :] for x viewed as [rows, cols] (rows = N*C, cols = spatial size).
void launch_global_pool(const void* x, void* y, DType dtype, PoolKind kind, std::int64_t rows, std::int64_t cols,
                        cudaStream_t stream);

}  // namespace loom::kernels
