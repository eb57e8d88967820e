// Launcher for Softmax and LogSoftmax along one axis, viewed as [outer, axis, inner].
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// y = exp(x - max) / sum(exp(x - max)) along the middle dim of x viewed as [outer, axis, inner];
// with log_softmax, y = x - max - log(sum(exp(x - max))). dtype f32 or f16; accumulation in f32.
void launch_softmax(const void* x, void* y, DType dtype, std::int64_t outer, std::int64_t axis, std::int64_t inner,
                    bool log_softmax, cudaStream_t stream);

}  // namespace loom::kernels
