// Launchers for 2-D MaxPool / AveragePool and GlobalAveragePool over NCHW tensors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

enum class PoolKind { max, average };

// Window geometry, resolved by host code from the ONNX attributes (ceil_mode is already reflected
// in out_h/out_w, which come from the planner's output shape).
struct Pool2dParams {
  PoolKind kind = PoolKind::max;
  std::int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool count_include_pad = false;  // average only
};

// One output element per thread. dtype f32 or f16 (f32 accumulation).
void launch_pool2d(const void* x, void* y, DType dtype, const Pool2dParams& params, cudaStream_t stream);

// y[r] = mean(x[r, :]) for x viewed as [rows, cols] (rows = N*C, cols = spatial size).
void launch_global_average_pool(const void* x, void* y, DType dtype, std::int64_t rows, std::int64_t cols,
                                cudaStream_t stream);

}  // namespace loom::kernels
