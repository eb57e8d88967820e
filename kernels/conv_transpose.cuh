// Launcher for ConvTranspose's last step: cuDNN's backward-data convolution writes the full,
// unpadded result; this cuts the output window out of it (pads, output_padding, output_shape),
// zero-extends where the output reaches past it, and adds the bias.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// Spatial extents over 3 axes (leading unit axes for 1-D and 2-D).
struct ConvTransposeCrop {
  std::int64_t planes = 0;    // N * M
  std::int64_t channels = 1;  // M, for the bias index
  std::int64_t full[3] = {1, 1, 1}, out[3] = {1, 1, 1}, pad_begin[3] = {};
};

// y[p, o] = full[p, o + pad_begin] (0 outside full) + bias[p % channels] (bias may be null).
// dtype f32 or f16; bias has the same dtype.
void launch_conv_transpose_crop(const void* full, const void* bias, void* y, DType dtype, const ConvTransposeCrop& crop,
                                cudaStream_t stream);

}  // namespace loom::kernels
