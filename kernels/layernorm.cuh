// Launcher for LayerNormalization over the trailing dims, viewed as [rows, cols].
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// y[r, j] = (x[r, j] - mean_r) / sqrt(var_r + epsilon) * scale[j] + bias[j]. x, y, scale and bias
// share dtype (f32 or f16); bias may be nullptr. Statistics in f32; mean[r] and inv_std[r] (same
// dtype as x, each may be nullptr) receive mean_r and 1 / sqrt(var_r + epsilon).
void launch_layernorm(const void* x, const void* scale, const void* bias, void* y, void* mean, void* inv_std,
                      DType dtype, std::int64_t rows, std::int64_t cols, float epsilon, cudaStream_t stream);

}  // namespace loom::kernels
