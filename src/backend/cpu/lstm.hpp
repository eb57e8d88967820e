// ONNX LSTM: forward, reverse or bidirectional, with optional sequence lengths and initial state.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_lstm_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
