// Convolution (ONNX Conv, 1-D to 3-D, groups, dilations, auto_pad) and ConvTranspose.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_conv_kernel(const KernelSpec& spec);
// conv_transpose.cpp
std::unique_ptr<OpKernel> make_conv_transpose_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
