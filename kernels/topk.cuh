// Launcher for TopK along one axis, viewed as [outer, axis, inner].
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// values[o, j, i], indices[o, j, i] for j < k: the k largest (or smallest) elements of x[o, :, i]
// in order, ties by lower index first, NaN above every number. dtype f32, f16, i64 or i32.
void launch_topk(const void* x, void* values, std::int64_t* indices, DType dtype, std::int64_t outer, std::int64_t axis,
                 std::int64_t inner, std::int64_t k, bool largest, cudaStream_t stream);

}  // namespace loom::kernels
