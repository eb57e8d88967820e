// 2-D convolution (ONNX Conv, NCHW, explicit pads, groups, dilations).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_conv_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
