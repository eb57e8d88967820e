// Launcher for Gather along one axis, data viewed as [outer, axis, inner].
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// y[o, k, i] = data[o, index(k), i] for k < index_count, with index(k) = indices[k] (i32 or i64),
// negative values counting from the end and out-of-range values clamped into [0, axis) (a GPU
// kernel cannot raise an error per element). Elements move as raw bytes: element_bytes 1/2/4/8.
void launch_gather(const void* data, const void* indices, DType index_dtype, void* y, std::size_t element_bytes,
                   std::int64_t outer, std::int64_t axis, std::int64_t inner, std::int64_t index_count,
                   cudaStream_t stream);

}  // namespace loom::kernels
