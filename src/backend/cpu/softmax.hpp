// Softmax, LogSoftmax and Hardmax along one axis (ONNX opset 13+ semantics).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_softmax_kernel(const KernelSpec& spec);  // also LogSoftmax, Hardmax

}  // namespace loom::backend::cpu
