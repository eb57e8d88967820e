// Launcher for ArgMax / ArgMin along one axis, viewed as [outer, axis, inner].
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// y[o, i] = index along the axis of the largest (is_max) or smallest element of x[o, :, i]; ties
// go to the first index, or the last with select_last; NaN beats every number. dtype f32, f16,
// i64 or i32. axis must be > 0.
void launch_argmax(const void* x, std::int64_t* y, DType dtype, std::int64_t outer, std::int64_t axis,
                   std::int64_t inner, bool is_max, bool select_last, cudaStream_t stream);

}  // namespace loom::kernels
