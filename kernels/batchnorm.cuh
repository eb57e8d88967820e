// Launcher for inference BatchNormalization: fold the four per-channel vectors into one scale and
// shift, then apply them to x viewed as [N, C, inner].
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// Per-channel inputs may be f32 or f16 (independently of x). `folded` is scratch for 2*channels
// floats. x and y are f32 or f16.
void launch_batchnorm(const void* x, void* y, DType dtype, const void* scale, const void* bias, const void* mean,
                      const void* var, DType param_dtype, float epsilon, float* folded, std::int64_t batch,
                      std::int64_t channels, std::int64_t inner, cudaStream_t stream);

}  // namespace loom::kernels
