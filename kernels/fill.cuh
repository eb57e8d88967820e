// Launcher for ConstantOfShape: a tensor filled with one element, moved as raw bytes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace loom::kernels {

// y[i] = the element whose bytes are the low `element_bytes` (1, 2, 4 or 8) bytes of `bits`, for
// i < count.
void launch_fill(void* y, std::size_t element_bytes, std::uint64_t bits, std::int64_t count, cudaStream_t stream);

}  // namespace loom::kernels
