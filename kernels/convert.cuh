// Launcher for float dtype conversion (f32 <-> f16 <-> bf16), used by Backend::convert and LSTM.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "loom/tensor.hpp"

namespace loom::kernels {

// dst[i] = src[i] converted with round to nearest even; both dtypes in {f32, f16, bf16}. Equal
// dtypes work too (a copy), though cudaMemcpyAsync is the cheaper way to do that.
void launch_convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::size_t count,
                    cudaStream_t stream);

}  // namespace loom::kernels
