// ONNX GRU: forward, reverse or bidirectional, both layouts, linear_before_reset 0 or 1, optional
// bias, sequence lengths and initial state.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_gru_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
